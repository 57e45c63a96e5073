#include "elf/ElfWriter.h"

#include <algorithm>
#include <cstring>

#include "support/Error.h"
#include "support/Hex.h"

namespace atomx::elf {

namespace {

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

template <typename T>
void append(PatchedFile& out, const T& value) {
  out.append(&value, sizeof(T));
}

// File offset of `addr`, which must lie in one of the new segments.
uint64_t newFileOffset(const OutputPlan& plan, const std::vector<uint64_t>& segmentOffsets, uint64_t addr) {
  for (size_t s = 0; s < plan.segments.size(); ++s) {
    const NewSegment& seg = plan.segments[s];
    if (addr >= seg.vaddr && addr < seg.vaddr + seg.bytes.size()) return segmentOffsets[s] + (addr - seg.vaddr);
  }
  throw InternalError(hex(addr) + " lies outside the new segments");
}

}  // namespace

uint64_t ElfWriter::programHeaderTableSize(const ElfImage& image, size_t newSegments) {
  return (image.segments().size() + newSegments) * sizeof(Elf64_Phdr);
}

PatchedFile ElfWriter::write(const ElfImage& image, PatchedFile out, const OutputPlan& plan) {
  // 1. Lay the new segments out after the file, each at an offset congruent
  //    to its address modulo the page size.
  std::vector<uint64_t> segmentOffsets;
  // Everything appended, at once: a tool's data can be tens of MB, and each
  // growth of the file's tail would copy it.
  uint64_t end = out.size();
  for (const NewSegment& seg : plan.segments) end = alignUp(end, kPageSize) + seg.bytes.size();
  out.reserve(end + (image.sections().size() + 16) * (sizeof(Elf64_Shdr) + 32) + 64);
  for (const NewSegment& seg : plan.segments) {
    if (seg.vaddr % kPageSize) throw InternalError("new segment not page aligned");
    const uint64_t offset = alignUp(out.size(), kPageSize);
    out.resize(offset);
    segmentOffsets.push_back(offset);
    out.append(seg.bytes.data(), seg.bytes.size());
  }

  // 2. The new program header table: the old entries (PT_PHDR and
  //    PT_GNU_EH_FRAME updated) with the new PT_LOADs after the last old one.
  std::vector<Elf64_Phdr> phdrs;
  const NewSegment& phdrSeg = plan.segments.at(plan.phdrSegment);
  const uint64_t phdrVaddr = phdrSeg.vaddr + plan.phdrOffsetInSegment;
  const uint64_t phdrOffset = segmentOffsets[plan.phdrSegment] + plan.phdrOffsetInSegment;
  const uint64_t phdrSize = programHeaderTableSize(image, plan.segments.size());
  if (plan.phdrOffsetInSegment + phdrSize > phdrSeg.bytes.size())
    throw InternalError("no room reserved for the program header table");
  // PT_LOADs stay sorted by address: the new ones after the last old one,
  // or before the first when they lie below the program.
  size_t firstLoad = SIZE_MAX, lastLoad = 0;
  for (size_t i = 0; i < image.segments().size(); ++i)
    if (image.segments()[i].p_type == PT_LOAD) firstLoad = std::min(firstLoad, i), lastLoad = i;
  const bool below = !plan.segments.empty() && plan.segments[0].vaddr < image.imageStart();
  auto addLoads = [&] {
    for (size_t s = 0; s < plan.segments.size(); ++s) {
      const NewSegment& seg = plan.segments[s];
      Elf64_Phdr load{};
      load.p_type = PT_LOAD;
      load.p_flags = seg.flags;
      load.p_offset = segmentOffsets[s];
      load.p_vaddr = load.p_paddr = seg.vaddr;
      load.p_filesz = seg.bytes.size();
      load.p_memsz = seg.bytes.size() + seg.zeroFill;
      load.p_align = kPageSize;
      phdrs.push_back(load);
    }
  };
  for (size_t i = 0; i < image.segments().size(); ++i) {
    if (below && i == firstLoad) addLoads();
    Elf64_Phdr ph = image.segments()[i];
    if (ph.p_type == PT_PHDR) {
      ph.p_offset = phdrOffset;
      ph.p_vaddr = ph.p_paddr = phdrVaddr;
      ph.p_filesz = ph.p_memsz = phdrSize;
    } else if (ph.p_type == PT_GNU_EH_FRAME && plan.ehFrameHdrAddr) {
      ph.p_vaddr = ph.p_paddr = plan.ehFrameHdrAddr;
      ph.p_offset = newFileOffset(plan, segmentOffsets, plan.ehFrameHdrAddr);
      ph.p_filesz = ph.p_memsz = plan.ehFrameHdrSize;
    }
    phdrs.push_back(ph);
    if (!below && i == lastLoad) addLoads();
  }
  out.write(phdrOffset, phdrs.data(), phdrSize);

  // 3. Section headers: the old ones (some renamed), then one per new
  //    section, then a new .shstrtab; the table itself goes at the end.
  std::vector<uint8_t> shstrtab(1, 0);
  auto addName = [&](const std::string& name) {
    uint32_t at = uint32_t(shstrtab.size());
    shstrtab.insert(shstrtab.end(), name.begin(), name.end());
    shstrtab.push_back(0);
    return at;
  };
  std::vector<Elf64_Shdr> shdrs;
  const uint64_t oldShoff = image.header().e_shoff;
  for (const Section& s : image.sections()) {
    Elf64_Shdr sh = out.get<Elf64_Shdr>(oldShoff + uint64_t(s.index) * sizeof(Elf64_Shdr));
    auto renamed = plan.renamedSections.find(s.index);
    sh.sh_name = s.index == 0 ? 0 : addName(renamed != plan.renamedSections.end() ? renamed->second : s.name);
    shdrs.push_back(sh);
  }
  for (size_t seg = 0; seg < plan.segments.size(); ++seg) {
    for (const NewSection& ns : plan.segments[seg].sections) {
      Elf64_Shdr sh{};
      sh.sh_name = addName(ns.name);
      sh.sh_type = ns.type;
      sh.sh_flags = ns.flags;
      sh.sh_addr = plan.segments[seg].vaddr + ns.offsetInSegment;
      sh.sh_offset = segmentOffsets[seg] + ns.offsetInSegment;
      sh.sh_size = ns.size;
      sh.sh_addralign = ns.align;
      shdrs.push_back(sh);
    }
  }
  Elf64_Shdr strSh{};
  strSh.sh_name = addName(".shstrtab");
  strSh.sh_type = SHT_STRTAB;
  strSh.sh_addralign = 1;
  strSh.sh_offset = out.size();
  strSh.sh_size = shstrtab.size();
  out.append(shstrtab.data(), shstrtab.size());
  shdrs.push_back(strSh);
  // Extended numbering keeps working: index 0 carries the count and index.
  const uint64_t shnum = shdrs.size();
  const uint32_t shstrndx = uint32_t(shnum - 1);
  if (shnum >= SHN_LORESERVE) shdrs[0].sh_size = shnum;
  if (shstrndx >= SHN_LORESERVE) shdrs[0].sh_link = shstrndx;

  out.resize(alignUp(out.size(), 8));
  const uint64_t shoff = out.size();
  for (const Elf64_Shdr& sh : shdrs) append(out, sh);

  Elf64_Ehdr ehdr = out.get<Elf64_Ehdr>(0);
  ehdr.e_phoff = phdrOffset;
  ehdr.e_phnum = uint16_t(phdrs.size());
  ehdr.e_shoff = shoff;
  ehdr.e_shnum = shnum >= SHN_LORESERVE ? 0 : uint16_t(shnum);
  ehdr.e_shstrndx = shstrndx >= SHN_LORESERVE ? SHN_XINDEX : uint16_t(shstrndx);
  out.put(0, ehdr);
  return out;
}

}  // namespace atomx::elf
