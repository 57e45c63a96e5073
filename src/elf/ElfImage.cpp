#include "elf/ElfImage.h"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "support/Error.h"
#include "support/Hex.h"

namespace atomx::elf {

namespace {

template <typename T>
T readStruct(std::span<const uint8_t> bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

// Entry i of RELA section s, without its symbol's facts (setSymbol).
Relocation readRela(std::span<const uint8_t> bytes, const Section& s, uint64_t i) {
  const uint64_t at = s.offset + i * sizeof(Elf64_Rela);
  const auto raw = readStruct<Elf64_Rela>(bytes, at);
  Relocation r;
  r.place = raw.r_offset;
  r.type = ELF64_R_TYPE(raw.r_info);
  r.symIndex = ELF64_R_SYM(raw.r_info);
  r.addend = raw.r_addend;
  r.entryOffset = at;
  return r;
}

void setSymbol(Relocation& r, const Symbol& sym) {
  r.symValue = sym.value;
  r.symShndx = sym.shndx;
  r.symType = sym.type;
}

bool addOverflows(uint64_t a, uint64_t b) { return a + b < a; }

}  // namespace

ElfImage ElfImage::load(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot open file (" + std::strerror(errno) + ")");
  struct stat st;
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    throw InputError(path + ": cannot read file (" + std::strerror(errno) + ")");
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw InputError(path + ": is a directory");
  }
  if (!S_ISREG(st.st_mode) || st.st_size == 0) {
    // Pipes, devices, empty files: read whatever there is.
    std::vector<uint8_t> bytes;
    uint8_t buf[1 << 16];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) bytes.insert(bytes.end(), buf, buf + n);
    const bool failed = n < 0;
    ::close(fd);
    if (failed) throw InputError(path + ": read error");
    return fromBytes(std::move(bytes), path);
  }
  // Mapping instead of reading: large programs are mostly debug information
  // that atomx never touches, so most of the file is never even paged in.
  const size_t size = size_t(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw InputError(path + ": cannot map file (" + std::strerror(errno) + ")");
  ElfImage image;
  image.name_ = path;
  image.storage_ = std::shared_ptr<const void>(map, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  image.bytes_ = {static_cast<const uint8_t*>(map), size};
  image.parse();
  return image;
}

ElfImage ElfImage::fromBytes(std::vector<uint8_t> bytes, std::string name) {
  ElfImage image;
  image.name_ = std::move(name);
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  image.bytes_ = {owned->data(), owned->size()};
  image.storage_ = std::move(owned);
  image.parse();
  return image;
}

void ElfImage::checkRange(uint64_t offset, uint64_t size, const std::string& what) const {
  if (addOverflows(offset, size) || offset + size > bytes_.size())
    throw InputError(name_ + ": " + what + " lies outside the file (offset " + hex(offset) + ", size " +
                     hex(size) + ", file size " + hex(bytes_.size()) + ")");
}

void ElfImage::parse() {
  if (bytes_.size() < EI_NIDENT || std::memcmp(bytes_.data(), ELFMAG, SELFMAG) != 0)
    throw InputError(name_ + ": not an ELF file");
  if (bytes_[EI_CLASS] == ELFCLASS32)
    throw UnsupportedError(name_ + ": 32-bit ELF files are not supported (atomx rewrites x86-64 only)");
  if (bytes_[EI_CLASS] != ELFCLASS64) throw InputError(name_ + ": unknown ELF class");
  if (bytes_[EI_DATA] != ELFDATA2LSB) throw UnsupportedError(name_ + ": big-endian ELF files are not supported");
  if (bytes_.size() < sizeof(Elf64_Ehdr)) throw InputError(name_ + ": truncated ELF header");
  ehdr_ = readStruct<Elf64_Ehdr>(bytes_, 0);
  if (ehdr_.e_machine != EM_X86_64)
    throw UnsupportedError(name_ + ": not an x86-64 ELF file (e_machine " + std::to_string(ehdr_.e_machine) + ")");
  if (ehdr_.e_type == ET_REL)
    throw UnsupportedError(name_ + ": this is an object file; atomx reads linked executables and shared objects");
  if (ehdr_.e_type != ET_EXEC && ehdr_.e_type != ET_DYN)
    throw UnsupportedError(name_ + ": ELF type " + std::to_string(ehdr_.e_type) + " is not an executable");

  // Program headers.
  if (ehdr_.e_phnum == 0) throw InputError(name_ + ": no program headers");
  if (ehdr_.e_phentsize != sizeof(Elf64_Phdr)) throw InputError(name_ + ": bad program header entry size");
  checkRange(ehdr_.e_phoff, uint64_t(ehdr_.e_phnum) * sizeof(Elf64_Phdr), "program header table");
  for (unsigned i = 0; i < ehdr_.e_phnum; ++i) {
    auto ph = readStruct<Elf64_Phdr>(bytes_, ehdr_.e_phoff + uint64_t(i) * sizeof(Elf64_Phdr));
    if (ph.p_type == PT_LOAD || ph.p_type == PT_DYNAMIC || ph.p_type == PT_INTERP)
      checkRange(ph.p_offset, ph.p_filesz, "segment " + std::to_string(i));
    if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz)
      throw InputError(name_ + ": segment " + std::to_string(i) + " has p_filesz > p_memsz");
    if (ph.p_type == PT_LOAD && addOverflows(ph.p_vaddr, ph.p_memsz))
      throw InputError(name_ + ": segment " + std::to_string(i) + " wraps around the address space");
    phdrs_.push_back(ph);
  }
  const bool hasInterp = std::any_of(phdrs_.begin(), phdrs_.end(), [](auto& p) { return p.p_type == PT_INTERP; });
  const bool hasDynamic = std::any_of(phdrs_.begin(), phdrs_.end(), [](auto& p) { return p.p_type == PT_DYNAMIC; });
  if (hasDynamic && hasInterp) kind_ = ehdr_.e_type == ET_DYN ? Kind::PieExecutable : Kind::Executable;
  else if (hasDynamic && ehdr_.e_type == ET_DYN) kind_ = Kind::SharedObject;  // or static PIE: see below
  else kind_ = Kind::StaticExecutable;

  parseSections();
  for (auto& s : sections_) {
    if (s.type == SHT_SYMTAB) {
      symtabIndex_ = s.index;
      parseSymbols(s, symbols_);
    } else if (s.type == SHT_DYNSYM) {
      dynsymIndex_ = s.index;
      parseSymbols(s, dynsyms_);
    }
  }
  parseStaticRelocations();
  parseDynamicRelocations();
  if (kind_ == Kind::SharedObject && (dynamicFlags1() & DF_1_PIE)) kind_ = Kind::StaticPie;
}

uint64_t ElfImage::dynamicFlags1() const {
  for (const Section& s : sections_) {
    if (s.type != SHT_DYNAMIC || s.entsize != sizeof(Elf64_Dyn)) continue;
    checkRange(s.offset, s.size, s.name);
    for (uint64_t off = s.offset; off + sizeof(Elf64_Dyn) <= s.offset + s.size; off += sizeof(Elf64_Dyn)) {
      const auto d = readStruct<Elf64_Dyn>(bytes_, off);
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_FLAGS_1) return d.d_un.d_val;
    }
  }
  return 0;
}

void ElfImage::parseSections() {
  if (ehdr_.e_shoff == 0) throw InputError(name_ + ": no section header table (atomx needs sections and symbols)");
  if (ehdr_.e_shentsize != sizeof(Elf64_Shdr)) throw InputError(name_ + ": bad section header entry size");
  checkRange(ehdr_.e_shoff, sizeof(Elf64_Shdr), "section header table");
  uint64_t count = ehdr_.e_shnum;
  uint32_t strIndex = ehdr_.e_shstrndx;
  auto first = readStruct<Elf64_Shdr>(bytes_, ehdr_.e_shoff);
  if (count == 0) count = first.sh_size;  // extended numbering
  if (strIndex == SHN_XINDEX) strIndex = first.sh_link;
  if (count == 0 || count > 1'000'000) throw InputError(name_ + ": bad section count");
  checkRange(ehdr_.e_shoff, count * sizeof(Elf64_Shdr), "section header table");
  if (strIndex >= count) throw InputError(name_ + ": section name table index out of range");

  std::vector<Elf64_Shdr> raw(count);
  for (uint64_t i = 0; i < count; ++i) raw[i] = readStruct<Elf64_Shdr>(bytes_, ehdr_.e_shoff + i * sizeof(Elf64_Shdr));
  const Elf64_Shdr& strtab = raw[strIndex];
  if (strtab.sh_type != SHT_STRTAB) throw InputError(name_ + ": section name table is not a string table");
  checkRange(strtab.sh_offset, strtab.sh_size, "section name table");

  sections_.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const Elf64_Shdr& sh = raw[i];
    Section s;
    s.index = uint32_t(i);
    if (sh.sh_name >= strtab.sh_size) throw InputError(name_ + ": section " + std::to_string(i) + " has a bad name offset");
    const char* begin = reinterpret_cast<const char*>(bytes_.data() + strtab.sh_offset + sh.sh_name);
    s.name.assign(begin, strnlen(begin, strtab.sh_size - sh.sh_name));
    s.type = sh.sh_type;
    s.flags = sh.sh_flags;
    s.addr = sh.sh_addr;
    s.offset = sh.sh_offset;
    s.size = sh.sh_size;
    s.link = sh.sh_link;
    s.info = sh.sh_info;
    s.addralign = sh.sh_addralign;
    s.entsize = sh.sh_entsize;
    if (s.type != SHT_NOBITS && s.type != SHT_NULL) checkRange(s.offset, s.size, "section " + s.name);
    if (s.isAlloc() && addOverflows(s.addr, s.size)) throw InputError(name_ + ": section " + s.name + " wraps around");
    sections_.push_back(std::move(s));
  }
}

void ElfImage::parseSymbols(const Section& table, std::vector<Symbol>& out) {
  if (table.entsize != sizeof(Elf64_Sym)) throw InputError(name_ + ": " + table.name + " has a bad entry size");
  if (table.link >= sections_.size() || sections_[table.link].type != SHT_STRTAB)
    throw InputError(name_ + ": " + table.name + " does not link to a string table");
  const Section& strtab = sections_[table.link];
  const uint64_t n = table.size / sizeof(Elf64_Sym);
  out.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    auto raw = readStruct<Elf64_Sym>(bytes_, table.offset + i * sizeof(Elf64_Sym));
    Symbol sym;
    sym.index = uint32_t(i);
    if (raw.st_name >= strtab.size && raw.st_name != 0)
      throw InputError(name_ + ": symbol " + std::to_string(i) + " in " + table.name + " has a bad name offset");
    if (strtab.size > 0) {
      const char* begin = reinterpret_cast<const char*>(bytes_.data() + strtab.offset + raw.st_name);
      sym.name.assign(begin, strnlen(begin, strtab.size - raw.st_name));
    }
    sym.value = raw.st_value;
    sym.size = raw.st_size;
    sym.type = ELF64_ST_TYPE(raw.st_info);
    sym.bind = ELF64_ST_BIND(raw.st_info);
    sym.other = raw.st_other;
    sym.shndx = raw.st_shndx;
    out.push_back(std::move(sym));
  }
}

void ElfImage::parseStaticRelocations() {
  // Static relocations kept by --emit-relocs live in non-allocated SHT_RELA
  // sections whose sh_info names the section they apply to.  Room for all of
  // them at once: growing section by section moved the vector once a section.
  uint64_t total = 0;
  for (const Section& s : sections_)
    if (s.type == SHT_RELA && !s.isAlloc() && s.info < sections_.size() && sections_[s.info].isAlloc())
      total += s.size / sizeof(Elf64_Rela);
  staticRelocs_.reserve(total);
  for (const Section& s : sections_) {
    if (s.type == SHT_REL && !s.isAlloc())
      throw UnsupportedError(name_ + ": SHT_REL relocation section " + s.name + " (x86-64 uses RELA)");
    if (s.type != SHT_RELA || s.isAlloc()) continue;
    if (s.entsize != sizeof(Elf64_Rela)) throw InputError(name_ + ": " + s.name + " has a bad entry size");
    if (s.info == 0 || s.info >= sections_.size()) throw InputError(name_ + ": " + s.name + " applies to no section");
    // Relocations of debug and other non-allocated sections have section
    // offsets, not addresses, as their place (they would collide with real
    // addresses) and never refer to anything atomx moves; skipping them also
    // halves load time.
    if (!sections_[s.info].isAlloc()) continue;
    if (s.link != symtabIndex_ || symtabIndex_ == 0)
      throw InputError(name_ + ": " + s.name + " does not use the symbol table");
    const uint64_t n = s.size / sizeof(Elf64_Rela);
    for (uint64_t i = 0; i < n; ++i) {
      Relocation r = readRela(bytes_, s, i);
      r.targetSection = s.info;
      if (r.symIndex >= symbols_.size())
        throw InputError(name_ + ": relocation " + std::to_string(i) + " in " + s.name + " has a bad symbol index");
      setSymbol(r, symbols_[r.symIndex]);
      staticRelocs_.push_back(std::move(r));
    }
  }
}

void ElfImage::parseDynamicRelocations() {
  for (const Section& s : sections_) {
    if (s.type != SHT_RELA || !s.isAlloc()) continue;
    if (s.entsize != sizeof(Elf64_Rela)) throw InputError(name_ + ": " + s.name + " has a bad entry size");
    const uint64_t n = s.size / sizeof(Elf64_Rela);
    for (uint64_t i = 0; i < n; ++i) {
      Relocation r = readRela(bytes_, s, i);
      if (r.symIndex != 0) {
        if (r.symIndex >= dynsyms_.size())
          throw InputError(name_ + ": dynamic relocation " + std::to_string(i) + " in " + s.name + " has a bad symbol index");
        setSymbol(r, dynsyms_[r.symIndex]);
        r.symName = dynsyms_[r.symIndex].name;
      }
      dynamicRelocs_.push_back(std::move(r));
    }
  }
}

const Section* ElfImage::sectionByName(const std::string& name) const {
  for (auto& s : sections_)
    if (s.name == name) return &s;
  return nullptr;
}

const Section* ElfImage::sectionAt(uint64_t addr) const {
  for (auto& s : sections_)
    if (s.isAlloc() && s.size > 0 && s.contains(addr)) return &s;
  return nullptr;
}

std::span<const uint8_t> ElfImage::sectionBytes(const Section& s) const {
  if (!s.hasFileBytes() || s.type == SHT_NULL) return {};
  return {bytes_.data() + s.offset, s.size};
}

std::optional<uint64_t> ElfImage::fileOffsetOf(uint64_t addr, uint64_t size) const {
  for (auto& ph : phdrs_) {
    if (ph.p_type != PT_LOAD) continue;
    if (addr >= ph.p_vaddr && !addOverflows(addr, size) && addr + size <= ph.p_vaddr + ph.p_filesz)
      return ph.p_offset + (addr - ph.p_vaddr);
  }
  return std::nullopt;
}

const uint8_t* ElfImage::bytesAt(uint64_t addr, uint64_t size) const {
  auto off = fileOffsetOf(addr, size);
  return off ? bytes_.data() + *off : nullptr;
}

uint64_t ElfImage::imageStart() const {
  uint64_t start = UINT64_MAX;
  for (auto& ph : phdrs_)
    if (ph.p_type == PT_LOAD) start = std::min(start, ph.p_vaddr);
  return start;
}

uint64_t ElfImage::imageEnd() const {
  uint64_t end = 0;
  for (auto& ph : phdrs_)
    if (ph.p_type == PT_LOAD) end = std::max(end, ph.p_vaddr + ph.p_memsz);
  return end;
}

}  // namespace atomx::elf
