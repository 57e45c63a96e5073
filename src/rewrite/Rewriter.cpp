#include "rewrite/Rewriter.h"

#include <chrono>
#include <cstring>

#include "analysis/Cfg.h"
#include "analysis/CodeReferences.h"
#include "analysis/Disassembler.h"
#include "analysis/JumpTables.h"
#include "analysis/Movability.h"
#include "analysis/ProcedureDiscovery.h"
#include "elf/ElfWriter.h"
#include "support/Error.h"
#include "support/Hex.h"

namespace atomx::rewrite {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

unwind::ByteView viewOf(const elf::ElfImage& image, const char* name) {
  const elf::Section* s = image.sectionByName(name);
  if (!s || !s->hasFileBytes()) return {};
  auto bytes = image.sectionBytes(*s);
  return {bytes.data(), bytes.size(), s->addr};
}

}  // namespace

Rewriter::Rewriter(const elf::ElfImage& image, RewriteOptions options) : image_(image), options_(options) {
  program_.image = &image_;
}

Rewriter::~Rewriter() = default;

void Rewriter::requireRelocations() const {
  for (const elf::Section& s : image_.sections()) {
    if (s.type != SHT_RELA || s.isAlloc() || s.info >= image_.sections().size()) continue;
    if (image_.sections()[s.info].isExec()) return;
  }
  throw InputError(image_.name() +
                   ": no relocations for its code; relink it with -Wl,--emit-relocs (or -Wl,-q) so atomx can move code");
}

void Rewriter::readUnwindInfo() {
  unwindInfo_ = unwind::parseEhFrame(viewOf(image_, ".eh_frame"), viewOf(image_, ".gcc_except_table"));
}

std::string Rewriter::unwindReason(const ir::Procedure& proc) const {
  return unwind::unwindObstacle(unwindInfo_, proc.start, proc.end);
}

void Rewriter::analyze() {
  if (analyzed_) return;
  const auto t0 = Clock::now();
  analysis::discoverProcedures(program_);
  analysis::resolvePltNames(program_, decoder_);
  analysis::disassemble(program_, decoder_);
  readUnwindInfo();
  std::vector<analysis::LandingPad> pads;
  for (const unwind::Fde& fde : unwindInfo_.fdes)
    for (const unwind::CallSite& cs : fde.callSites)
      if (cs.landingPad) pads.push_back({cs.landingPad, cs.start});
  relocs_ = std::make_unique<analysis::RelocIndex>(image_);
  analysis::findJumpTables(program_, *relocs_);
  analysis::collectCodeReferences(program_, *relocs_, pads);
  analysis::buildCfgs(program_, pads);
  analysis::decideMovability(program_, *relocs_, [this](const ir::Procedure& p) { return unwindReason(p); });
  countProcedures();
  report_.analyzeSeconds = secondsSince(t0);
  analyzed_ = true;
}

void Rewriter::countProcedures() {
  report_ = RewriteReport{};
  for (const ir::Procedure& p : program_.procs) {
    report_.procedures++;
    report_.codeBytes += p.size();
    if (p.isMovable()) {
      report_.movedProcedures++;
      report_.movedCodeBytes += p.size();
    }
  }
  report_.inputFileBytes = image_.bytes().size();
}

std::vector<uint8_t> Rewriter::rewrite() {
  requireRelocations();
  analyze();
  const auto t0 = Clock::now();

  // New code goes right after the program's last segment: close enough for
  // every RIP-relative operand and rel32 branch to reach the old image.
  const uint64_t textAddr = alignUp(image_.imageEnd(), elf::ElfWriter::kPageSize);
  const uint64_t imageStart = image_.imageStart();
  // Every rel32 and RIP-relative field of the new code must reach all of the
  // old image; leave room for the new code itself.
  if (textAddr - imageStart > (uint64_t(1) << 31) - 2 * report_.codeBytes - (uint64_t(64) << 20))
    throw UnsupportedError(image_.name() + ": its segments span " + hex(textAddr - imageStart) +
                           " bytes; new code placed after them could not reach its start with 32-bit displacements");
  if (options_.padInstructions) insertions_ = std::make_unique<layout::NopPadding>(options_.padInstructions);
  const layout::Insertions* insertions = instrumenter_ ? &instrumenter_->insertions() : insertions_.get();
  layout_ = std::make_unique<layout::CodeLayout>(program_, textAddr, insertions);
  layout_->run();
  // With instrumentation the runtime and the generated call bodies follow
  // the moved code.
  const uint64_t codeEnd = instrumenter_ ? instrumenter_->placeCode(textAddr + layout_->size()) : textAddr + layout_->size();

  // Unwind tables for the new code, in a read-only segment after it.
  std::vector<unwind::MovedRange> ranges;
  for (const layout::MovedProc& m : layout_->moved()) {
    const ir::Procedure& p = program_.procs[m.proc];
    ranges.push_back({p.start, p.end, m.newStart, m.newEnd});
  }
  const unwind::Translate translate = [this](uint64_t old) { return layout_->translate(old); };
  const unwind::ByteView ehFrame = viewOf(image_, ".eh_frame");
  const unwind::ByteView except = viewOf(image_, ".gcc_except_table");
  const unwind::UnwindLayout sizes = unwind::planUnwind(unwindInfo_, ehFrame, except, ranges, translate);
  const uint64_t roAddr = alignUp(codeEnd, elf::ElfWriter::kPageSize);
  const uint64_t ehFrameAddr = roAddr;
  const uint64_t hdrAddr = alignUp(ehFrameAddr + sizes.ehFrameSize, unwind::kEhFrameHdrAlign);
  const uint64_t lsdaAddr = alignUp(hdrAddr + sizes.ehFrameHdrSize, unwind::kLsdaAlign);
  const uint64_t phdrAddr = alignUp(lsdaAddr + sizes.lsdaSize, 8);
  std::vector<unwind::RelocAt> exceptRelocs;
  if (const elf::Section* s = image_.sectionByName(".gcc_except_table"))
    for (const elf::Relocation& r : image_.staticRelocations())
      if (r.targetSection == s->index) exceptRelocs.push_back({r.place, r.type});
  unwind::UnwindSections unwindBytes = unwind::buildUnwind(unwindInfo_, ehFrame, except, exceptRelocs, ranges,
                                                           translate, ehFrameAddr, hdrAddr, lsdaAddr);

  elf::OutputPlan plan;
  elf::NewSegment roSeg;
  roSeg.flags = PF_R;
  roSeg.vaddr = roAddr;
  const uint64_t phdrSize = elf::ElfWriter::programHeaderTableSize(image_, instrumenter_ ? 3 : 2);
  roSeg.bytes.resize(phdrAddr - roAddr + phdrSize, 0);
  // Instrumentation data: read-only at the end of this segment, writable in
  // a segment of its own.
  uint64_t toolDataAddr = 0, rwAddr = 0;
  std::vector<uint8_t> toolData;
  if (instrumenter_) {
    toolData = instrumenter_->readOnlyBytes(*layout_, imageStart);
    toolDataAddr = alignUp(phdrAddr + phdrSize, elf::ElfWriter::kPageSize);
    rwAddr = alignUp(toolDataAddr + toolData.size(), elf::ElfWriter::kPageSize);
    instrumenter_->placeData(toolDataAddr, rwAddr);
    roSeg.bytes.resize(toolDataAddr - roAddr, 0);
    roSeg.bytes.insert(roSeg.bytes.end(), toolData.begin(), toolData.end());
    roSeg.sections.push_back({".atomx.tooldata", SHT_PROGBITS, SHF_ALLOC, toolDataAddr - roAddr, toolData.size(), 4096});
  }
  std::vector<uint8_t> text = layout_->emit(*relocs_);
  if (instrumenter_) instrumenter_->appendCode(text, textAddr);
  report_.newCodeBytes = text.size();
  elf::NewSegment textSeg;
  textSeg.flags = PF_R | PF_X;
  textSeg.vaddr = textAddr;
  textSeg.sections.push_back({".atomx.text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0, text.size(), 64});
  textSeg.bytes = std::move(text);

  auto place = [&](const std::vector<uint8_t>& blob, uint64_t addr) {
    if (!blob.empty()) std::memcpy(roSeg.bytes.data() + (addr - roAddr), blob.data(), blob.size());
  };
  place(unwindBytes.ehFrame, ehFrameAddr);
  place(unwindBytes.ehFrameHdr, hdrAddr);
  place(unwindBytes.lsda, lsdaAddr);
  roSeg.sections.push_back({".eh_frame", SHT_PROGBITS, SHF_ALLOC, ehFrameAddr - roAddr, unwindBytes.ehFrame.size(), 8});
  roSeg.sections.push_back(
      {".eh_frame_hdr", SHT_PROGBITS, SHF_ALLOC, hdrAddr - roAddr, unwindBytes.ehFrameHdr.size(), 4});
  if (!unwindBytes.lsda.empty())
    roSeg.sections.push_back(
        {".gcc_except_table", SHT_PROGBITS, SHF_ALLOC, lsdaAddr - roAddr, unwindBytes.lsda.size(), 8});
  plan.phdrSegment = 1;
  plan.phdrOffsetInSegment = phdrAddr - roAddr;
  plan.ehFrameHdrAddr = hdrAddr;
  plan.ehFrameHdrSize = unwindBytes.ehFrameHdr.size();
  // The old unwind sections stay in the file, dead; their names go to the new ones.
  for (const char* name : {".eh_frame", ".eh_frame_hdr", ".gcc_except_table"})
    if (const elf::Section* s = image_.sectionByName(name)) plan.renamedSections[s->index] = std::string(".atomx.orig") + name;
  plan.segments.push_back(std::move(textSeg));
  plan.segments.push_back(std::move(roSeg));
  if (instrumenter_) {
    elf::NewSegment rwSeg;
    rwSeg.flags = PF_R | PF_W;
    rwSeg.vaddr = rwAddr;
    rwSeg.bytes = instrumenter_->writableBytes(layout_->relocated(image_.entry()), imageStart, textAddr,
                                               textAddr + layout_->size());
    rwSeg.sections.push_back({".atomx.data", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 0, rwSeg.bytes.size(), 16});
    rwSeg.zeroFill = instrumenter_->writableZeroBytes();
    if (rwSeg.zeroFill)
      rwSeg.sections.push_back({".atomx.counters", SHT_NOBITS, SHF_ALLOC | SHF_WRITE, rwSeg.bytes.size(), rwSeg.zeroFill, 64});
    plan.segments.push_back(std::move(rwSeg));
  }

  // The output is the input, patched, plus what ElfWriter appends: reserve
  // it all at once so the large copy is made once.
  std::vector<uint8_t> file;
  file.reserve(image_.bytes().size() + plan.segments[0].bytes.size() + plan.segments[1].bytes.size() +
               (instrumenter_ ? plan.segments[2].bytes.size() : 0) +
               4 * elf::ElfWriter::kPageSize + (image_.sections().size() + 8) * sizeof(Elf64_Shdr) + 4096);
  file.assign(image_.bytes().begin(), image_.bytes().end());
  ReferenceFixer fixer(program_, *layout_, *relocs_, file);
  report_.fixups = fixer.run(uint16_t(elf::ElfWriter::newSectionIndex(image_, 0)));
  if (options_.poisonOriginal) {
    for (const layout::MovedProc& m : layout_->moved()) {
      const ir::Procedure& p = program_.procs[m.proc];
      auto off = image_.fileOffsetOf(p.start, p.size());
      std::memset(file.data() + *off, 0xcc, p.size());
    }
  }
  if (instrumenter_) {
    // The runtime starts first and then enters the program (runtime/abi.h).
    Elf64_Ehdr ehdr;
    std::memcpy(&ehdr, file.data(), sizeof ehdr);
    ehdr.e_entry = instrumenter_->entryPoint();
    std::memcpy(file.data(), &ehdr, sizeof ehdr);
  }
  std::vector<uint8_t> out = elf::ElfWriter::write(image_, std::move(file), plan);
  report_.outputFileBytes = out.size();
  report_.rewriteSeconds = secondsSince(t0);
  return out;
}

}  // namespace atomx::rewrite
