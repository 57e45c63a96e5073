// atomx::FrameTracker: frames left by unwinding, for analysis code.
//
// ProcAfter runs before each way out of a procedure that the procedure
// itself takes (a return, a tail jump); it does not run when a C++ exception
// or longjmp discards the frame: the unwinder removes frames without running
// any of their code, and longjmp jumps over them.  A tool whose calls and
// returns must balance passes the stack pointer to its ProcBefore and
// ProcAfter routines (REGV RegRSP in the C API, reg(Reg::rsp) in the C++
// one): it is the same at both, the frame's CFA less 8, and a frame whose
// stack pointer is at or below the one a later ProcBefore or ProcAfter of
// the same thread sees is gone.  The tracker says which, at that next event
// (innermost first), so that entered = returned + unwound + still active.
//
//   thread_local atomx::FrameTracker<long> frames;   // one per thread
//   void Enter(long proc, long sp) { frames.enter(sp, proc, [](long p) { ++unwound[p]; }); ++entered[proc]; }
//   void Leave(long proc, long sp) { if (frames.leave(sp, [](long p) { ++unwound[p]; })) ++returned[proc]; }
//
// Header only; it allocates (a std::vector per thread), so routines using it
// are not light (docs/instrumenting.md, "Cheap calls").  A signal handler
// running on an alternate stack (sigaltstack) has stack pointers unrelated to
// the thread's: track its frames apart, or not at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace atomx {

template <class Payload>
class FrameTracker {
 public:
  // ProcBefore of a frame whose stack pointer is `sp`: the frames at or
  // below it are gone; `unwound(payload)` for each, innermost first.
  template <class F>
  void enter(uint64_t sp, Payload payload, F&& unwound) {
    popBelow(sp, true, unwound);
    frames_.push_back({sp, std::move(payload)});
  }

  // ProcAfter of the frame at `sp`: the frames below it are gone
  // (`unwound` for each); then the frame itself leaves.  False when no
  // frame was entered at `sp` (its ProcBefore ran in another thread, or
  // before the tracker existed).
  template <class F>
  bool leave(uint64_t sp, F&& unwound) {
    popBelow(sp, false, unwound);
    if (frames_.empty() || frames_.back().sp != sp) return false;
    frames_.pop_back();
    return true;
  }

  // The frames still active (at the end of a thread or of the program), innermost first.
  template <class F>
  void drain(F&& active) {
    while (!frames_.empty()) {
      active(frames_.back().payload);
      frames_.pop_back();
    }
  }

  std::size_t depth() const { return frames_.size(); }

 private:
  struct Frame {
    uint64_t sp;
    Payload payload;
  };
  // Stacks grow down: a frame entered at sp' <= sp (or < sp) is gone.
  template <class F>
  void popBelow(uint64_t sp, bool orEqual, F& unwound) {
    while (!frames_.empty() && (frames_.back().sp < sp || (orEqual && frames_.back().sp == sp))) {
      unwound(frames_.back().payload);
      frames_.pop_back();
    }
  }
  std::vector<Frame> frames_;
};

}  // namespace atomx
