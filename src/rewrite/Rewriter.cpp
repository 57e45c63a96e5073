#include "rewrite/Rewriter.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "support/Error.h"
#include "support/Hex.h"

namespace atomx::rewrite {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
uint64_t alignDown(uint64_t v, uint64_t a) { return v / a * a; }

}  // namespace

void checkRewritable(const elf::ElfImage& image) {
  if (const std::string why = analysis::fileObstacle(image); !why.empty())
    throw UnsupportedError(image.name() + ": " + why);
}

Rewriter::Rewriter(const elf::ElfImage& image, RewriteOptions options) : image_(image), options_(options) {}

Rewriter::~Rewriter() = default;

elf::PatchedFile Rewriter::rewrite() {
  checkRewritable(image_);
  analyze();
  const auto t0 = Clock::now();
  PhaseTimes& phases = report_.phases;
  const uint64_t above = alignUp(image_.imageEnd(), elf::ElfWriter::kPageSize);
  layOut(above, phases);
  if (const uint64_t below = placeBelow(above)) {  // a second run of the phases adds to their times
    layOut(below, phases);
    if (appendedEnd() > alignDown(image_.imageStart(), elf::ElfWriter::kPageSize)) layOut(above, phases);
  }
  elf::PatchedFile patched = phases.time("patchFile", [&] { return patchFile(); });
  elf::PatchedFile out = phases.time("writeElf", [&] { return writeElf(std::move(patched)); });
  report_.rewriteSeconds = secondsSince(t0);
  return out;
}

void Rewriter::analyze() {
  if (model_) return;
  model_ = analysis::analyzeProgram(image_, &report_.phases);
  countProcedures();
  report_.analyzeSeconds = model_->analyzeSeconds;
}

void Rewriter::countProcedures() {
  for (const ir::Procedure& p : program().procs) {
    report_.procedures++;
    report_.codeBytes += p.size();
    if (p.isMovable()) {
      report_.movedProcedures++;
      report_.movedCodeBytes += p.size();
    }
  }
  report_.inputFileBytes = image_.bytes().size();
}

// Every phase that places the new segments, the new code at `textAddr`.
void Rewriter::layOut(uint64_t textAddr, PhaseTimes& phases) {
  textAddr_ = textAddr;
  plan_ = elf::OutputPlan{};
  phases.time("layOutCode", [&] { layOutCode(); });
  phases.time("buildUnwindTables", [&] { buildUnwindTables(); });
  phases.time("layOutSegments", [&] { layOutSegments(); });
  phases.time("emitCode", [&] { emitCode(); });
}

uint64_t Rewriter::appendedEnd() const {
  uint64_t end = 0;
  for (const elf::NewSegment& seg : plan_.segments) end = std::max(end, seg.vaddr + seg.bytes.size() + seg.zeroFill);
  return end;
}

// Where the new segments go in a fixed-address executable when they fit
// below the program, or 0.  The kernel starts the heap after the highest
// PT_LOAD, so segments below it leave the heap where the original's is
// (docs/rewriting.md, "Heap and stack addresses").  A PIE's first segment
// is pinned at the kernel's base, so nothing goes below it.  The size comes
// from the layout just made above the program (at `above`), plus slack:
// branches between the new code and the old may relax differently at the
// other distance.
uint64_t Rewriter::placeBelow(uint64_t above) const {
  // ATOMX_TEST_SEGMENTS_ABOVE=1, for the heap test's must-fail twin only:
  // the segments stay above the program, where they move the heap.
  if (image_.isPie() || std::getenv("ATOMX_TEST_SEGMENTS_ABOVE")) return 0;
  const uint64_t span = appendedEnd() - above;
  const uint64_t room = alignUp(span + span / 8 + (uint64_t(64) << 10), elf::ElfWriter::kPageSize);
  const uint64_t top = alignDown(image_.imageStart(), elf::ElfWriter::kPageSize);
  return top >= kLowestAddress + room ? top - room : 0;
}

uint64_t Rewriter::mapBase() const { return std::min(textAddr_, image_.imageStart()); }

// New code goes right after the program's last segment (or below its first:
// placeBelow), close enough for every RIP-relative operand and rel32 branch
// to reach the old image; the additions' code follows the moved code.
void Rewriter::layOutCode() {
  if (textAddr_ > image_.imageStart() &&
      textAddr_ - image_.imageStart() > (uint64_t(1) << 31) - 2 * report_.codeBytes - (uint64_t(64) << 20))
    throw UnsupportedError(image_.name() + ": its segments span " + hex(textAddr_ - image_.imageStart()) +
                           " bytes; new code placed after them could not reach its start with 32-bit displacements");
  if (options_.padInstructions) padding_ = std::make_unique<layout::NopPadding>(options_.padInstructions);
  const layout::Insertions* insertions = additions_ ? &additions_->insertions() : padding_.get();
  layout_ = std::make_unique<layout::CodeLayout>(program(), textAddr_, insertions);
  layout_->run();
  codeEnd_ = textAddr_ + layout_->size();
  if (additions_) codeEnd_ = additions_->placeCode(codeEnd_);
}

// Unwind tables for the new code, at the start of a read-only segment after
// it; the program header table follows them.
void Rewriter::buildUnwindTables() {
  std::vector<unwind::MovedRange> ranges;
  for (const layout::MovedProc& m : layout_->moved()) {
    const ir::Procedure& p = program().procs[m.proc];
    ranges.push_back({p.start, p.end, m.newStart, m.newEnd});
  }
  const unwind::Translate translate = [this](uint64_t old) { return layout_->translate(old); };
  const unwind::ByteView ehFrame = analysis::sectionView(image_, ".eh_frame");
  const unwind::ByteView except = analysis::sectionView(image_, ".gcc_except_table");
  std::vector<unwind::RelocAt> exceptRelocs;
  if (const elf::Section* s = image_.sectionByName(".gcc_except_table"))
    for (const elf::Relocation& r : image_.staticRelocations())
      if (r.targetSection == s->index) exceptRelocs.push_back({r.place, r.type});
  unwind::UnwindWriter writer(model_->unwind, ehFrame, except, exceptRelocs, ranges, translate);
  const unwind::UnwindLayout sizes = writer.sizes();
  ehFrameAddr_ = alignUp(codeEnd_, elf::ElfWriter::kPageSize);
  hdrAddr_ = alignUp(ehFrameAddr_ + sizes.ehFrameSize, unwind::kEhFrameHdrAlign);
  lsdaAddr_ = alignUp(hdrAddr_ + sizes.ehFrameHdrSize, unwind::kLsdaAlign);
  phdrAddr_ = alignUp(lsdaAddr_ + sizes.lsdaSize, 8);
  unwindBytes_ = writer.build(ehFrameAddr_, hdrAddr_, lsdaAddr_);
}

// The segments after the program's: new code (filled by emitCode), then a
// read-only one with the unwind tables, the program header table and the
// additions' read-only data, then the additions' writable data.
void Rewriter::layOutSegments() {
  const uint64_t roAddr = ehFrameAddr_;
  elf::NewSegment textSeg;
  textSeg.flags = PF_R | PF_X;
  textSeg.vaddr = textAddr_;
  elf::NewSegment roSeg;
  roSeg.flags = PF_R;
  roSeg.vaddr = roAddr;
  const uint64_t phdrSize = elf::ElfWriter::programHeaderTableSize(image_, additions_ ? 3 : 2);
  roSeg.bytes.resize(phdrAddr_ - roAddr + phdrSize, 0);
  auto place = [&](const std::vector<uint8_t>& blob, uint64_t addr) {
    if (!blob.empty()) std::memcpy(roSeg.bytes.data() + (addr - roAddr), blob.data(), blob.size());
  };
  place(unwindBytes_.ehFrame, ehFrameAddr_);
  place(unwindBytes_.ehFrameHdr, hdrAddr_);
  place(unwindBytes_.lsda, lsdaAddr_);
  roSeg.sections.push_back({".eh_frame", SHT_PROGBITS, SHF_ALLOC, ehFrameAddr_ - roAddr, unwindBytes_.ehFrame.size(), 8});
  roSeg.sections.push_back(
      {".eh_frame_hdr", SHT_PROGBITS, SHF_ALLOC, hdrAddr_ - roAddr, unwindBytes_.ehFrameHdr.size(), 4});
  if (!unwindBytes_.lsda.empty())
    roSeg.sections.push_back(
        {".gcc_except_table", SHT_PROGBITS, SHF_ALLOC, lsdaAddr_ - roAddr, unwindBytes_.lsda.size(), 8});
  elf::NewSegment rwSeg;
  rwSeg.flags = PF_R | PF_W;
  if (additions_) {
    const std::vector<uint8_t> toolData = additions_->readOnlyBytes(*layout_, mapBase());
    const uint64_t toolDataAddr = alignUp(phdrAddr_ + phdrSize, elf::ElfWriter::kPageSize);
    rwSeg.vaddr = alignUp(toolDataAddr + toolData.size(), elf::ElfWriter::kPageSize);
    additions_->placeData(toolDataAddr, rwSeg.vaddr);
    roSeg.bytes.resize(toolDataAddr - roAddr, 0);
    roSeg.bytes.insert(roSeg.bytes.end(), toolData.begin(), toolData.end());
    roSeg.sections.push_back({".atomx.tooldata", SHT_PROGBITS, SHF_ALLOC, toolDataAddr - roAddr, toolData.size(), 4096});
  }
  plan_.phdrSegment = 1;
  plan_.phdrOffsetInSegment = phdrAddr_ - roAddr;
  plan_.ehFrameHdrAddr = hdrAddr_;
  plan_.ehFrameHdrSize = unwindBytes_.ehFrameHdr.size();
  // The old unwind sections stay in the file, dead; their names go to the new ones.
  for (const char* name : {".eh_frame", ".eh_frame_hdr", ".gcc_except_table"})
    if (const elf::Section* s = image_.sectionByName(name)) plan_.renamedSections[s->index] = std::string(".atomx.orig") + name;
  plan_.segments.push_back(std::move(textSeg));
  plan_.segments.push_back(std::move(roSeg));
  if (additions_) plan_.segments.push_back(std::move(rwSeg));
}

// The moved code, then the additions' code, then their writable data (which
// may name addresses in that code).
void Rewriter::emitCode() {
  std::vector<uint8_t> text = layout_->emit(model_->relocs);
  if (additions_) additions_->appendCode(text, textAddr_);
  report_.newCodeBytes = text.size();
  elf::NewSegment& textSeg = plan_.segments[0];
  textSeg.sections.push_back({".atomx.text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0, text.size(), 64});
  textSeg.bytes = std::move(text);
  if (!additions_) return;
  elf::NewSegment& rwSeg = plan_.segments[2];
  rwSeg.bytes = additions_->writableBytes(layout_->relocated(image_.entry()), mapBase(), textAddr_,
                                          textAddr_ + layout_->size());
  rwSeg.sections.push_back({".atomx.data", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 0, rwSeg.bytes.size(), 16});
  rwSeg.zeroFill = additions_->writableZeroBytes();
  if (rwSeg.zeroFill)
    rwSeg.sections.push_back({".atomx.counters", SHT_NOBITS, SHF_ALLOC | SHF_WRITE, rwSeg.bytes.size(), rwSeg.zeroFill, 64});
}

// The input's bytes with every reference to moved code fixed, the old code
// poisoned on request, and the entry point set.
elf::PatchedFile Rewriter::patchFile() {
  // The output is the input, patched (a page copied where it is written),
  // plus what ElfWriter appends.
  elf::PatchedFile file(image_.bytes());
  ReferenceFixer fixer(program(), *layout_, model_->relocs, file);
  report_.fixups = fixer.run(uint16_t(elf::ElfWriter::newSectionIndex(image_, 0)));
  if (options_.poisonOriginal) {
    for (const layout::MovedProc& m : layout_->moved()) {
      const ir::Procedure& p = program().procs[m.proc];
      auto off = image_.fileOffsetOf(p.start, p.size());
      file.fill(*off, 0xcc, p.size());
    }
  }
  if (additions_) {
    // The runtime starts first and then enters the program (runtime/abi.h).
    Elf64_Ehdr ehdr = file.get<Elf64_Ehdr>(0);
    ehdr.e_entry = additions_->entryPoint();
    file.put(0, ehdr);
  }
  return file;
}

elf::PatchedFile Rewriter::writeElf(elf::PatchedFile file) {
  elf::PatchedFile out = elf::ElfWriter::write(image_, std::move(file), plan_);
  report_.outputFileBytes = out.size();
  return out;
}

}  // namespace atomx::rewrite
