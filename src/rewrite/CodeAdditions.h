// CodeAdditions: what a client of the rewriter (instrumentation) adds to the
// output file.  The rewriter lays out the program's own code and asks the
// additions, in this order, for:
//
//   insertions()        code inserted into the moved procedures (CodeLayout)
//   placeCode()         where its own code goes, right after the moved code
//   readOnlyBytes()     its read-only data (given the final code layout)
//   placeData()         where its read-only and writable data go
//   appendCode()        its code's bytes, appended to the moved code
//   writableBytes()     its writable data, then writableZeroBytes() of zeros
//   entryPoint()        the address the program now starts at
//
// The rewriter knows nothing else of instrumentation: src/instrument
// implements this interface (instrument::Instrumenter), and the layering
// keeps rewrite from including anything of it.
#pragma once

#include <cstdint>
#include <vector>

#include "layout/CodeLayout.h"

namespace atomx::rewrite {

class CodeAdditions {
 public:
  virtual ~CodeAdditions() = default;

  virtual const layout::Insertions& insertions() const = 0;
  // After CodeLayout::run(): places the added code at `codeEnd`; returns its end.
  virtual uint64_t placeCode(uint64_t codeEnd) = 0;
  // The read-only data; `mapBase` is the lowest address of the input image.
  virtual std::vector<uint8_t> readOnlyBytes(const layout::CodeLayout& layout, uint64_t mapBase) const = 0;
  virtual void placeData(uint64_t readOnlyAddress, uint64_t writableAddress) = 0;
  // Appends the added code to `text`, the moved code that starts at `textAddress`.
  virtual void appendCode(std::vector<uint8_t>& text, uint64_t textAddress) const = 0;
  virtual std::vector<uint8_t> writableBytes(uint64_t originalEntry, uint64_t mapBase, uint64_t newCodeStart,
                                             uint64_t newCodeEnd) const = 0;
  virtual uint64_t writableZeroBytes() const = 0;
  virtual uint64_t entryPoint() const = 0;
};

}  // namespace atomx::rewrite
