// atomx::libc: the memory that libc's best-known memory and string
// functions touch, from their arguments and results (C++, header only;
// docs/cachesim.md, "libc's memory traffic").  A tool that sees the
// program's own references but not libc's (libc is not instrumented) gives
// its simulator these instead: the seed's idea for bcopy (Borg, Kessler and
// Wall, "Generation and analysis of very long address traces", 1990,
// section 5.1).  tools/cachesim uses it at run time; an offline simulator
// of a regenerated trace can use it with recorded arguments.
//
//     const atomx::libc::Function* f = atomx::libc::find("memcpy");   // instrumentation side
//     atomx::libc::Extent e = atomx::libc::extent(f->kind, rdi, rsi, rdx, rax);   // analysis side
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

namespace detail {
// Bytes up to and including the NUL at s, at most max.  The asm keeps the
// compiler from turning the loop into a call of libc's strlen.
__attribute__((target("general-regs-only"))) inline uint64_t stringBytes(uint64_t s, uint64_t max = UINT64_MAX) {
  const char* p = reinterpret_cast<const char*>(s);
  uint64_t n = 0;
  while (n < max) {
    asm("" : "+r"(p));
    if (p[n++] == 0) break;
  }
  return n;
}
// Bytes compared up to and including the first difference (or NUL, for
// strings), at most max.
__attribute__((target("general-regs-only"))) inline uint64_t compared(uint64_t a, uint64_t b, uint64_t max, bool strings) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(a);
  const unsigned char* q = reinterpret_cast<const unsigned char*>(b);
  uint64_t n = 0;
  while (n < max) {
    asm("" : "+r"(p), "+r"(q));
    const unsigned char x = p[n], y = q[n];
    ++n;
    if (x != y || (strings && x == 0)) break;
  }
  return n;
}
}  // namespace detail

// The extent of a call with arguments a0, a1, a2 (the first three integer
// arguments: %rdi, %rsi, %rdx) and result r (%rax on return; only for
// needsResult kinds).  For the string kinds it reads the program's memory
// as the call finds it (call it before the call, or after one that leaves
// its inputs as they were): an offline user passes recorded lengths instead
// (Extent's fields directly).
// (General registers only, and no jump table: the compiler would zero the
// Extent with SSE and test the kind with an indirect jump, and the analysis
// routine calling it would then save the vector state.)
__attribute__((target("general-regs-only"), optimize("no-jump-tables"))) inline Extent extent(Kind k, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t r = 0) {
  const uint64_t a[3] = {a0, a1, a2};
  Extent e;
  if (k == Kind::Copy) e.from = a[1], e.to = a[0], e.read = e.written = a[2];
  else if (k == Kind::Bcopy) e.from = a[0], e.to = a[1], e.read = e.written = a[2];
  else if (k == Kind::Set) e.to = a[0], e.written = a[2];
  else if (k == Kind::Zero) e.to = a[0], e.written = a[1];
  else if (k == Kind::Calloc) {
    const unsigned __int128 n = (unsigned __int128)a[0] * a[1];
    if (r && n < kCallocClearedBelow) e.to = r, e.written = uint64_t(n);
  } else if (k == Kind::Strlen) e.from = a[0], e.read = detail::stringBytes(a[0]);
  else if (k == Kind::Strnlen) e.from = a[0], e.read = a[1] ? detail::stringBytes(a[0], a[1]) : 0;
  else if (k == Kind::Strcpy) e.from = a[1], e.to = a[0], e.read = e.written = detail::stringBytes(a[1]);
  else if (k == Kind::Strcmp) e.from = a[0], e.also = a[1], e.two = true, e.read = detail::compared(a[0], a[1], UINT64_MAX, true);
  else if (k == Kind::Strncmp) e.from = a[0], e.also = a[1], e.two = true, e.read = detail::compared(a[0], a[1], a[2], true);
  else if (k == Kind::Memcmp) e.from = a[0], e.also = a[1], e.two = true, e.read = detail::compared(a[0], a[1], a[2], false);
  return e;
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
