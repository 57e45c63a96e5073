#include "debuginfo/StackVariables.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace atomx::debuginfo {

namespace {

using Base = StackVariable::Base;

struct Place {
  Base base;
  int64_t offset;
};

// A frame base: DW_OP_call_frame_cfa, DW_OP_reg7/reg6, DW_OP_breg7/breg6 k.
std::optional<Place> frameBase(const Dwarf_Op* e, size_t n) {
  if (n != 1) return std::nullopt;
  switch (e[0].atom) {
    case DW_OP_call_frame_cfa: return Place{Base::Cfa, 0};
    case DW_OP_reg7: return Place{Base::Rsp, 0};
    case DW_OP_reg6: return Place{Base::Rbp, 0};
    case DW_OP_breg7: return Place{Base::Rsp, int64_t(e[0].number)};
    case DW_OP_breg6: return Place{Base::Rbp, int64_t(e[0].number)};
    default: return std::nullopt;
  }
}

// A variable's location expression: the stack slot it names, if one.
std::optional<Place> slotOf(const Dwarf_Op* e, size_t n, const std::optional<Place>& fb) {
  if (n != 1) return std::nullopt;  // pieces, computed places, DW_OP_stack_value
  switch (e[0].atom) {
    case DW_OP_fbreg:
      if (!fb) return std::nullopt;
      return Place{fb->base, fb->offset + int64_t(e[0].number)};
    case DW_OP_breg7: return Place{Base::Rsp, int64_t(e[0].number)};
    case DW_OP_breg6: return Place{Base::Rbp, int64_t(e[0].number)};
    default: return std::nullopt;
  }
}

uint64_t sizeOf(Dwarf_Die* var) {
  Dwarf_Attribute a;
  Dwarf_Die type;
  Dwarf_Word size;
  if (dwarf_attr_integrate(var, DW_AT_type, &a) && dwarf_formref_die(&a, &type) && dwarf_aggregate_size(&type, &size) == 0 && size)
    return size;
  return 1;
}

struct Walker {
  std::vector<StackVariable>& out;

  // The pc ranges of a scope (a subprogram, lexical block, inlined call).
  static std::vector<std::pair<uint64_t, uint64_t>> ranges(Dwarf_Die* die) {
    std::vector<std::pair<uint64_t, uint64_t>> r;
    Dwarf_Addr base, start, end;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) r.emplace_back(start, end);
    return r;
  }

  void variable(Dwarf_Die* var, const std::optional<Place>& fb, const std::vector<std::pair<uint64_t, uint64_t>>& scope) {
    Dwarf_Attribute loc;
    if (!dwarf_attr(var, DW_AT_location, &loc)) return;
    const char* name = dwarf_diename(var);
    const uint64_t size = sizeOf(var);
    Dwarf_Addr base, start, end;
    Dwarf_Op* expr;
    size_t n;
    ptrdiff_t off = 0;
    while ((off = dwarf_getlocations(&loc, off, &base, &start, &end, &expr, &n)) > 0) {
      const std::optional<Place> slot = slotOf(expr, n, fb);
      if (!slot) continue;
      auto add = [&](uint64_t lo, uint64_t hi) {
        if (lo < hi) out.push_back({lo, hi, slot->base, slot->offset, size, name ? name : ""});
      };
      if (start == 0 && end == Dwarf_Addr(-1))  // one expression: wherever its scope is
        for (const auto& [lo, hi] : scope) add(lo, hi);
      else
        add(start, end);
    }
  }

  void walk(Dwarf_Die* die, std::optional<Place> fb, std::vector<std::pair<uint64_t, uint64_t>> scope) {
    Dwarf_Die child;
    if (dwarf_child(die, &child) != 0) return;
    do {
      const int tag = dwarf_tag(&child);
      switch (tag) {
        case DW_TAG_subprogram: {
          std::optional<Place> cfb;
          Dwarf_Attribute a;
          Dwarf_Op* e;
          size_t n;
          if (dwarf_attr(&child, DW_AT_frame_base, &a) && dwarf_getlocation(&a, &e, &n) == 0) cfb = frameBase(e, n);
          walk(&child, cfb, ranges(&child));
          break;
        }
        case DW_TAG_lexical_block:
        case DW_TAG_inlined_subroutine: {
          auto r = ranges(&child);
          walk(&child, fb, r.empty() ? scope : r);
          break;
        }
        case DW_TAG_variable:
        case DW_TAG_formal_parameter:
          if (!scope.empty()) variable(&child, fb, scope);
          break;
        case DW_TAG_GNU_formal_parameter_pack:  // a variadic template's parameters
          walk(&child, fb, scope);
          break;
        case DW_TAG_namespace:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
          walk(&child, fb, scope);  // member functions' definitions
          break;
        default: break;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }
};

}  // namespace

std::vector<StackVariable> readStackVariables(const std::string& path) {
  std::vector<StackVariable> out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  if (Dwarf* dwarf = dwarf_begin(fd, DWARF_C_READ)) {
    Walker w{out};
    Dwarf_Off offset = 0, next;
    size_t headerSize;
    while (dwarf_nextcu(dwarf, offset, &next, &headerSize, nullptr, nullptr, nullptr) == 0) {
      Dwarf_Die cu;
      if (dwarf_offdie(dwarf, offset + headerSize, &cu)) w.walk(&cu, std::nullopt, {});
      offset = next;
    }
    dwarf_end(dwarf);
  }
  close(fd);
  std::stable_sort(out.begin(), out.end(), [](const StackVariable& a, const StackVariable& b) { return a.lo < b.lo; });
  return out;
}

}  // namespace atomx::debuginfo
