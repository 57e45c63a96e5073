// atomx::libc: the memory that libc's best-known memory and string
// functions touch, from their arguments and results (C++, header only;
// docs/cachesim.md, "libc's memory traffic").  A tool that sees the
// program's own references but not libc's (libc is not instrumented) gives
// its simulator these instead: the seed's idea for bcopy (Borg, Kessler and
// Wall, "Generation and analysis of very long address traces", 1990,
// section 5.1).  tools/cachesim uses it at run time; the trace's
// regenerator (src/trace/LibraryCalls.cpp) with recorded arguments, results
// and lengths (libc::shape).  What the string and comparison functions
// read is defined once, in <atomx/libc_length.h> (C: the trace recorder
// measures with it at the call).
//
//     const atomx::libc::Function* f = atomx::libc::find("memcpy");   // instrumentation side
//     atomx::libc::Extent e = atomx::libc::extent(f->kind, rdi, rsi, rdx, rax);   // analysis side
//     atomx::libc::Extent e = atomx::libc::shape(f->kind, rdi, rsi, rdx, rax, length);  // a recorded length
//     atomx::libc::references(e, 32, [&](uint64_t addr, uint32_t size, bool write) { ... });
//
// The model: a call reads and writes each byte of its ranges once, front to
// back, in pieces of `chunk` bytes (a copy: each piece read, then written),
// and nothing else.  So every cache line of the ranges is touched, in the
// order of the copy; the number of references is not libc's (which depends
// on its vector width, its version and the CPU).  What libc reads beyond
// a string's end (it reads aligned vectors) is not modelled, nor the
// non-temporal stores of very large copies.  calloc: the block is written
// (zeroed) when it is below glibc's default mmap threshold (128 KiB);
// larger blocks are fresh pages, which glibc does not clear.  Everything
// here calls nothing (analysis routines that use it stay light).
#pragma once

#include <cstdint>
#include <string_view>

#include <atomx/libc_length.h>

// Hidden: in an analysis object, a default-visibility inline function the
// compiler does not inline is called through the PLT, which makes the
// calling routine heavy (<atomx/light.hpp>).
#pragma GCC visibility push(hidden)
namespace atomx::libc {

enum class Kind : uint8_t {
  Copy,     // memcpy(dst, src, n) & co.: read src, write dst, n bytes
  Set,      // memset(dst, c, n): write dst, n bytes
  Zero,     // bzero(dst, n)
  Bcopy,    // bcopy(src, dst, n)
  Calloc,   // calloc(n, size): the result, n * size bytes, zeroed (below the threshold)
  Strlen,   // strlen(s): s up to its NUL, inclusive
  Strnlen,  // strnlen(s, max)
  Strcpy,   // strcpy(dst, src), stpcpy: src up to its NUL, inclusive, copied
  Strncpy,  // strncpy(dst, src, n): src up to its NUL, at most n bytes, read; n bytes of dst written
  Strcmp,   // strcmp(a, b): both, up to the first difference or NUL, inclusive
  Strncmp,  // strncmp(a, b, n)
  Memcmp,   // memcmp(a, b, n), bcmp: both, up to the first difference, inclusive
};

struct Function {
  const char* name;
  Kind kind;
};

// The functions modelled, by the names a call site names them (a PLT or GOT
// call: <atomx/atomx.hpp>'s Inst::calleeName), the fortified _chk forms
// with them (their extra argument, the destination's size, changes nothing
// they touch).
inline constexpr Function kFunctions[] = {
    {"memcpy", Kind::Copy},          {"__memcpy_chk", Kind::Copy},   {"mempcpy", Kind::Copy},
    {"__mempcpy_chk", Kind::Copy},   {"memmove", Kind::Copy},        {"__memmove_chk", Kind::Copy},
    {"memset", Kind::Set},           {"__memset_chk", Kind::Set},    {"bzero", Kind::Zero},
    {"explicit_bzero", Kind::Zero},  {"bcopy", Kind::Bcopy},         {"calloc", Kind::Calloc},
    {"strlen", Kind::Strlen},        {"strnlen", Kind::Strnlen},     {"strcpy", Kind::Strcpy},
    {"__strcpy_chk", Kind::Strcpy},  {"stpcpy", Kind::Strcpy},       {"__stpcpy_chk", Kind::Strcpy},
    {"strncpy", Kind::Strncpy},      {"__strncpy_chk", Kind::Strncpy},
    {"strcmp", Kind::Strcmp},        {"strncmp", Kind::Strncmp},     {"memcmp", Kind::Memcmp},
    {"bcmp", Kind::Memcmp},          {"__memcmpeq", Kind::Memcmp},
};

// Its entry, or null when the function is not modelled.
inline const Function* find(std::string_view name) {
  for (const Function& f : kFunctions)
    if (name == f.name) return &f;
  return nullptr;
}

// Whether the model needs the call's result (then it is applied when the
// call returns; a tail call, which does not return to the program, is then
// not modelled).
inline constexpr bool needsResult(Kind k) { return k == Kind::Calloc; }

// glibc's default M_MMAP_THRESHOLD: calloc blocks this large or larger are
// fresh pages, which it does not clear.
inline constexpr uint64_t kCallocClearedBelow = 128 * 1024;

// What one call touches: `read` bytes at `from` (and as many at `also`, for
// the comparisons), and `written` bytes at `to`.
struct Extent {
  uint64_t from = 0, also = 0, to = 0;
  uint64_t read = 0, written = 0;
  bool two = false;  // reads at `also` too
};

// How the length of a call of kind k is measured in memory
// (<atomx/libc_length.h>: the one definition of what the string and
// comparison functions read), or 0 when its extent follows from its
// arguments (and calloc's result) alone.
inline constexpr unsigned measuredBy(Kind k) {
  return k == Kind::Strlen    ? ATOMX_LIBC_STRLEN
         : k == Kind::Strnlen ? ATOMX_LIBC_STRNLEN
         : k == Kind::Strcpy  ? ATOMX_LIBC_STRCPY
         : k == Kind::Strncpy ? ATOMX_LIBC_STRNCPY
         : k == Kind::Strcmp  ? ATOMX_LIBC_STRCMP
         : k == Kind::Strncmp ? ATOMX_LIBC_STRNCMP
         : k == Kind::Memcmp  ? ATOMX_LIBC_MEMCMP
                              : 0u;
}

// The extent of a call with arguments a0, a1, a2 (the first three integer
// arguments: %rdi, %rsi, %rdx), result r (%rax on return; only for
// needsResult kinds) and, for a kind measuredBy names, `length` as
// atomx_libc_measure measures it (an offline user passes a recorded one).
// (General registers only, and no jump table: the compiler would zero the
// Extent with SSE and test the kind with an indirect jump, and the analysis
// routine calling it would then save the vector state.)
__attribute__((target("general-regs-only"), optimize("no-jump-tables"))) inline Extent shape(Kind k, uint64_t a0, uint64_t a1, uint64_t a2,
                                                                                         uint64_t r, uint64_t length) {
  Extent e;
  if (k == Kind::Copy) e.from = a1, e.to = a0, e.read = e.written = a2;
  else if (k == Kind::Bcopy) e.from = a0, e.to = a1, e.read = e.written = a2;
  else if (k == Kind::Set) e.to = a0, e.written = a2;
  else if (k == Kind::Zero) e.to = a0, e.written = a1;
  else if (k == Kind::Calloc) {
    const unsigned __int128 n = (unsigned __int128)a0 * a1;
    if (r && n < kCallocClearedBelow) e.to = r, e.written = uint64_t(n);
  } else if (k == Kind::Strlen || k == Kind::Strnlen) e.from = a0, e.read = length;
  else if (k == Kind::Strcpy) e.from = a1, e.to = a0, e.read = e.written = length;
  else if (k == Kind::Strncpy) e.from = a1, e.to = a0, e.read = length, e.written = a2;  // the rest of n is NUL-padded
  else if (k == Kind::Strcmp || k == Kind::Strncmp || k == Kind::Memcmp) e.from = a0, e.also = a1, e.two = true, e.read = length;
  return e;
}

// The extent of a call, its length measured in the program's memory as the
// call finds it (call it before the call, or after one that leaves its
// inputs as they were): what the online tool does.
__attribute__((target("general-regs-only"))) inline Extent extent(Kind k, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t r = 0) {
  return shape(k, a0, a1, a2, r, atomx_libc_measure(measuredBy(k), a0, a1, a2));
}

// The extent's references, front to back in pieces of `chunk` bytes (at
// most a first-level line, so that each piece touches every line it covers):
// per piece, the reads (from, then also), then the write.  f(addr, size, write).
template <class F>
inline void references(const Extent& e, uint32_t chunk, F&& f) {
  const uint64_t n = e.read > e.written ? e.read : e.written;
  for (uint64_t o = 0; o < n; o += chunk) {
    if (o < e.read) {
      const uint32_t size = uint32_t(e.read - o < chunk ? e.read - o : chunk);
      f(e.from + o, size, false);
      if (e.two) f(e.also + o, size, false);
    }
    if (o < e.written) f(e.to + o, uint32_t(e.written - o < chunk ? e.written - o : chunk), true);
  }
}

// References of an extent, without visiting them: for counts.
inline uint64_t readPieces(const Extent& e, uint32_t chunk) { return (e.read + chunk - 1) / chunk * (e.two ? 2 : 1); }
inline uint64_t writePieces(const Extent& e, uint32_t chunk) { return (e.written + chunk - 1) / chunk; }

}  // namespace atomx::libc
#pragma GCC visibility pop
