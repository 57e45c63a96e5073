#include "analysis/Threads.h"

#include <cstring>
#include <string_view>

#include "support/Hex.h"
#include "x86/Semantics.h"

namespace atomx::analysis {

namespace {

bool startsThreads(std::string_view name) {
  static const char* const kExact[] = {
      "pthread_create", "thrd_create", "clone", "clone3", "__clone", "__clone2", "timer_create", "mq_notify",
      "lio_listio", "lio_listio64", "__kmpc_fork_call", "g_thread_new", "g_thread_try_new"};
  for (const char* e : kExact)
    if (name == e) return true;
  static const char* const kPrefixes[] = {"aio_", "GOMP_", "_ZNSt6thread", "_ZNSt3jthread"};
  for (const char* p : kPrefixes)
    if (name.substr(0, std::strlen(p)) == p) return true;
  return false;
}

// Libraries that start no thread of their own that could run the
// program's code (a thread they start runs their code only).
bool quietLibrary(std::string_view soname) {
  static const char* const kQuiet[] = {
      "libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "ld-linux", "libdl.so", "libpthread.so", "librt.so",
      "libutil.so", "libcrypt.so", "libz.so", "libbz2.so", "liblzma.so", "libreadline.so", "libedit.so",
      "libncurses", "libtinfo.so", "libmvec.so", "libresolv.so", "libanl.so"};
  for (const char* q : kQuiet)
    if (soname.substr(0, std::strlen(q)) == q) return true;
  return false;
}

}  // namespace

std::string threadEvidence(const elf::ElfImage& image) {
  for (const elf::Symbol& s : image.dynamicSymbols())
    if (s.shndx == SHN_UNDEF && !s.name.empty() && startsThreads(s.name)) return "it imports " + s.name;
  // DT_NEEDED entries name their library in .dynstr.
  const elf::Section* dynamic = image.sectionByName(".dynamic");
  const elf::Section* dynstr = image.sectionByName(".dynstr");
  if (!dynamic || !dynstr || !dynamic->hasFileBytes() || !dynstr->hasFileBytes()) return "";
  const auto entries = image.sectionBytes(*dynamic);
  const auto strings = image.sectionBytes(*dynstr);
  for (size_t at = 0; at + sizeof(Elf64_Dyn) <= entries.size(); at += sizeof(Elf64_Dyn)) {
    Elf64_Dyn d;
    std::memcpy(&d, entries.data() + at, sizeof d);
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag != DT_NEEDED || d.d_un.d_val >= strings.size()) continue;
    const char* name = reinterpret_cast<const char*>(strings.data()) + d.d_un.d_val;
    const std::string_view soname(name, strnlen(name, strings.size() - d.d_un.d_val));
    if (!quietLibrary(soname)) return "it needs " + std::string(soname);
  }
  return "";
}

std::string gsEvidence(const ir::Program& program) {
  if (!program.image) return "";
  for (const elf::Symbol& s : program.image->dynamicSymbols())
    if (s.shndx == SHN_UNDEF && s.name == "arch_prctl") return "it imports arch_prctl";
  for (const ir::Procedure& p : program.procs)
    for (const x86::Insn& in : p.insns) {
      const uint8_t* bytes = program.image->bytesAt(in.address, in.length);
      if (!bytes) continue;
      if (x86::hasLegacyPrefix(bytes, in.length, x86::prefix::kGS))
        return "it addresses memory through %gs at " + hex(in.address);
    }
  return "";
}

}  // namespace atomx::analysis
