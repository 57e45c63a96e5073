// ElfImage: a read-only, bounds-checked view of a linked x86-64 ELF file:
// an executable (PIE or not, dynamically or statically linked) or a shared
// object.  It reads what the file holds and refuses only what it cannot read
// (an object file, another machine, a malformed file); which files atomx
// rewrites is decided elsewhere (rewrite::checkRewritable).
//
// Everything atomx learns about the input file comes from here:
// sections, program headers, the static and dynamic symbol tables, the static
// relocations kept by `ld --emit-relocs` and the dynamic relocations.  Every
// offset and size read from the file is checked against the file's size, so a
// malformed file becomes an InputError that names what is wrong, never a crash
// (tests/fuzz/elf_reader_fuzz.cpp keeps it that way).
#pragma once

#include <elf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace atomx::elf {

struct Section {
  uint32_t index = 0;
  std::string name;
  uint32_t type = 0;
  uint64_t flags = 0;
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
  uint32_t info = 0;
  uint64_t addralign = 0;
  uint64_t entsize = 0;

  bool isAlloc() const { return flags & SHF_ALLOC; }
  bool isExec() const { return flags & SHF_EXECINSTR; }
  bool hasFileBytes() const { return type != SHT_NOBITS; }
  bool contains(uint64_t a) const { return a >= addr && a < addr + size; }
};

struct Symbol {
  uint32_t index = 0;  // index in its table
  std::string name;
  uint64_t value = 0;
  uint64_t size = 0;
  uint8_t type = STT_NOTYPE;
  uint8_t bind = STB_LOCAL;
  uint8_t other = 0;
  uint16_t shndx = SHN_UNDEF;
};

// A relocation with its symbol already looked up.  For static relocations
// (`.rela.X` sections kept by --emit-relocs) `place` is the virtual address
// of the patched field and symValue is the symbol's final address, so the
// referenced address of an absolute relocation is symValue + addend.
struct Relocation {
  uint64_t place = 0;
  uint32_t type = 0;
  uint32_t symIndex = 0;
  int64_t addend = 0;
  uint64_t symValue = 0;
  uint16_t symShndx = SHN_UNDEF;
  uint8_t symType = STT_NOTYPE;
  uint32_t targetSection = 0;  // section the relocation applies to (0 for dynamic)
  std::string symName;         // filled for dynamic relocations only
  uint64_t entryOffset = 0;    // file offset of the Elf64_Rela itself
};

class ElfImage {
 public:
  enum class Kind : uint8_t {
    Executable,        // ET_EXEC with an interpreter
    PieExecutable,     // ET_DYN with an interpreter
    SharedObject,      // ET_DYN with a dynamic section and no interpreter
    StaticPie,         // the same, marked DF_1_PIE: a statically linked PIE
    StaticExecutable,  // no interpreter or no dynamic section
  };

  // Reads and validates the file.  Throws InputError / UnsupportedError.
  static ElfImage load(const std::string& path);
  static ElfImage fromBytes(std::vector<uint8_t> bytes, std::string name = "<memory>");

  const std::string& name() const { return name_; }
  std::span<const uint8_t> bytes() const { return bytes_; }
  const Elf64_Ehdr& header() const { return ehdr_; }
  Kind kind() const { return kind_; }
  // Position-independent: its addresses are offsets from a load base (a
  // PIE executable or a shared object).
  bool isPie() const { return ehdr_.e_type == ET_DYN; }
  uint64_t entry() const { return ehdr_.e_entry; }

  const std::vector<Section>& sections() const { return sections_; }
  const std::vector<Elf64_Phdr>& segments() const { return phdrs_; }
  const std::vector<Symbol>& symbols() const { return symbols_; }
  const std::vector<Symbol>& dynamicSymbols() const { return dynsyms_; }
  // Static relocations of allocated sections (debug ones are not kept).
  const std::vector<Relocation>& staticRelocations() const { return staticRelocs_; }
  const std::vector<Relocation>& dynamicRelocations() const { return dynamicRelocs_; }
  // Index of .symtab/.dynsym in sections(), 0 if absent.
  uint32_t symtabIndex() const { return symtabIndex_; }
  uint32_t dynsymIndex() const { return dynsymIndex_; }

  const Section* sectionByName(const std::string& name) const;
  // The allocated section that holds `addr` (SHT_NOBITS included).
  const Section* sectionAt(uint64_t addr) const;

  // File bytes of a section; empty for SHT_NOBITS.
  std::span<const uint8_t> sectionBytes(const Section& s) const;
  // File offset of the byte at virtual address `addr` if `size` bytes from
  // there lie in the file image of one PT_LOAD segment.
  std::optional<uint64_t> fileOffsetOf(uint64_t addr, uint64_t size = 1) const;
  // Bytes at a virtual address, or nullptr if not backed by the file.
  const uint8_t* bytesAt(uint64_t addr, uint64_t size) const;

  // End of the highest PT_LOAD in memory (vaddr + memsz).
  uint64_t imageEnd() const;
  // Lowest address of a PT_LOAD.
  uint64_t imageStart() const;

 private:
  ElfImage() = default;
  void parse();
  void parseSections();
  void parseSymbols(const Section& table, std::vector<Symbol>& out);
  void parseStaticRelocations();
  void parseDynamicRelocations();
  uint64_t dynamicFlags1() const;  // DT_FLAGS_1, 0 if absent
  void checkRange(uint64_t offset, uint64_t size, const std::string& what) const;

  std::string name_;
  // The file's bytes: a read-only private mapping of the file, or a vector
  // for fromBytes(); storage_ keeps whichever it is alive.
  std::span<const uint8_t> bytes_;
  std::shared_ptr<const void> storage_;
  Elf64_Ehdr ehdr_{};
  Kind kind_ = Kind::Executable;
  std::vector<Section> sections_;
  std::vector<Elf64_Phdr> phdrs_;
  std::vector<Symbol> symbols_;
  std::vector<Symbol> dynsyms_;
  std::vector<Relocation> staticRelocs_;
  std::vector<Relocation> dynamicRelocs_;
  uint32_t symtabIndex_ = 0;
  uint32_t dynsymIndex_ = 0;
};

}  // namespace atomx::elf
