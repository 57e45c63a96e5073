// atomx: the site table of <atomx/memrefs.hpp>, analysis side (C++, header
// only): what a tool that simulates memory does with the calls memrefs
// placed, whatever it simulates (tools/cache, tools/cachesim).  Everything
// here calls nothing, so the routines using it stay light.
//
//     std::vector<atomx::memsites::Site> sites = atomx::memsites::read(table, n);
//     void Ref(long s, long ea) {                        // one memory instruction
//       atomx::memsites::operands(sites.data(), s, ea, ea, 1, [&](long site, long desc, uint64_t addr) { ... });
//     }
#pragma once

#include <cstdint>
#include <vector>

namespace atomx::memsites {

enum Kind { kRead = 0, kWrite = 1, kModify = 2, kLockedModify = 3 };

struct Site {
  uint64_t pc;
  long proc;
  long op[2];    // kind | size << 8 | source << 24 | rep << 32, or -1
  long disp;     // a computed member: disp + slot[base] + slot[index] * scale
  long formula;  // base slot | index slot << 8 | scale << 16; slot 0xff: none
};
inline int kind(long desc) { return int(desc & 0xff); }
inline unsigned size(long desc) { return unsigned((desc >> 8) & 0xffff); }
inline bool conditionalRep(const Site& s) { return ((s.op[0] >> 32) & 3) == 2; }  // repz/repnz cmps, scas

inline std::vector<Site> read(const long* table, long n) {
  std::vector<Site> v(size_t(n > 0 ? n : 0));
  for (long s = 0; s < n; ++s)
    v[size_t(s)] = {uint64_t(table[6 * s]), table[6 * s + 1], {table[6 * s + 2], table[6 * s + 3]}, table[6 * s + 4],
                    table[6 * s + 5]};
  return v;
}

// Site s's operands at ea0/ea1, `times` iterations (rep): element by element,
// each iteration's operands in order, as the CPU (and Valgrind) does them:
// f(s, desc, address) for each.
template <class F>
inline void operands(const Site* sites, long s, long ea0, long ea1, uint64_t times, F&& f) {
  for (uint64_t k = 0; k < times; ++k)
    for (long desc : sites[s].op)
      if (desc >= 0) f(s, desc, uint64_t(((desc >> 24) & 0xff) ? ea1 : ea0) + k * size(desc));
}

// The later members of a group (sites first + 1 .. first + count - 1), each
// one operand whose address is computed from the registers r[] held before
// `first`: f(s, desc, address) for each.  (r: exactly the ten values the call
// passed, each stored on its own: no zero-filled tail, which the compiler
// writes with vector stores.)
template <class F>
inline void members(const Site* sites, long first, long count, const uint64_t (&r)[10], F&& f) {
  auto reg = [&](unsigned k) { return k < 10 ? r[k] : 0; };  // 0xff: no register
  for (long s = first + 1; s < first + count; ++s) {
    const Site& site = sites[s];
    const unsigned b = site.formula & 0xff, x = (site.formula >> 8) & 0xff;
    f(s, site.op[0], uint64_t(site.disp) + reg(b) + reg(x) * uint64_t(site.formula >> 16));
  }
}

// rep string instructions: one access per iteration, %rcx of them; for
// repz/repnz cmps and scas as many as %rcx went down, known only afterwards
// (before() keeps the addresses, after() simulates).  The direction flag is
// assumed clear (addresses go up), as compilers leave it.
struct Rep {
  uint64_t a, b, rcx;
  template <class F>
  void before(const Site* sites, long s, long ea0, long ea1, long count, F&& f) {
    if (conditionalRep(sites[s])) {
      a = uint64_t(ea0), b = uint64_t(ea1), rcx = uint64_t(count);
      return;
    }
    operands(sites, s, ea0, ea1, uint64_t(count), f);
  }
  template <class F>
  void after(const Site* sites, long s, long count, F&& f) {
    operands(sites, s, long(a), long(b), rcx - uint64_t(count), f);
  }
};

}  // namespace atomx::memsites
