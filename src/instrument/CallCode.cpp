// A site's code (CallCode.h, emitSite): its parts, each from its own
// emitter, and the call part that enters the body.
#include "instrument/CallCode.h"

#include "support/Error.h"
#include "x86/Assembler.h"

namespace atomx::instrument {

using x86::Assembler;

void emitCallPart(uint64_t enter, uint64_t body, Assembler& a) {
  a.stepOverRedZone();
  a.callRel32(enter);
  const int64_t rel = int64_t(body) - int64_t(a.here() + 7);
  if (rel < INT32_MIN || rel > INT32_MAX) throw InternalError("body out of reach of its site");
  const uint32_t r = uint32_t(int32_t(rel));
  a.raw({0x0f, 0x1f, 0x80, uint8_t(r), uint8_t(r >> 8), uint8_t(r >> 16), uint8_t(r >> 24)});  // nopl body(%rax)
  a.stepBackOverRedZone();
}

void emitSite(const Engine& engine, const Site& site, CounterMode mode, uint64_t at, uint64_t enter, uint64_t body,
              const CodeAddresses& addresses, std::vector<uint8_t>& out) {
  const size_t start = out.size();
  Assembler a(out, at);
  if (site.unless) {
    emitUnless(engine, site, addresses, enter, body, a);
  } else {
    emitIncrements(engine, site, mode, addresses, a);
    emitStores(site, out);
    if (site.needsCall()) emitCallPart(enter, body, a);
  }
  if (out.size() - start != site.codeSize) throw InternalError("site code has the wrong size");
}

}  // namespace atomx::instrument
