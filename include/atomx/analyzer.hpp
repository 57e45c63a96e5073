// The slot for offline analysers of a trace (`atomx analyze TRACE --tool
// NAME[,NAME...] -j N`; docs/architecture.md, "The analyser slot").
//
// An analyser keeps its state per *shard*, one thread's stream, as
// DynamoRIO's analysis tools do: the regenerator walks the shards on up to
// N threads at once and hands each shard's events (blocks, outside calls,
// signals, thread begin and end; in merged mode, slices) to that shard's
// own Consumer, so a shard needs no lock.  When every shard has ended,
// `merge` gets them all in stream order (by thread id, as `atomx regen`
// prints them), never in the order they happened to finish; `report` then
// writes the result.  An
// analyser that merges by sums and writes in stream order gives the same
// bytes for every N (tests/trace: analyze.jobs_identical).
//
//   struct PerProcedure : atomx::trace::Analyzer {
//     struct Shard : atomx::trace::Consumer {
//       std::map<std::string, uint64_t> n;
//       void block(const atomx::trace::BlockRun& b) override { n[b.procedure] += b.count; }
//     };
//     std::map<std::string, uint64_t> total;
//     const char* name() const override { return "per-procedure"; }
//     std::unique_ptr<atomx::trace::Consumer> shard(const atomx::trace::Shard&) override {
//       return std::make_unique<Shard>();
//     }
//     void merge(std::vector<std::unique_ptr<atomx::trace::Consumer>>& shards) override {
//       for (auto& s : shards) for (auto& [p, n] : static_cast<Shard&>(*s).n) total[p] += n;
//     }
//     void report(const atomx::trace::Summary&) override { ... print total ... }
//   };
//   atomx::trace::TraceReader trace("run.trace");
//   PerProcedure a;
//   trace.analyze({&a}, 0);
//
// BlockRun::procedure and BlockRun::insns stay valid until analyze()
// returns: merge and report may keep the pointers.
#pragma once

#include <atomx/trace.hpp>

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace atomx::trace {

struct Shard {
  size_t index;        // 0, 1, ...: the stream order (by thread id)
  int thread;          // the thread's id
  std::string stream;  // its stream's file: thread.TID.axt
  // The shards run one at a time in stream order (one job, or one
  // stream): a shard may write its output as it goes.
  bool inOrder;
};

class Analyzer {
 public:
  virtual ~Analyzer() = default;
  virtual const char* name() const = 0;
  // The state of one shard.  Called on the thread that regenerates it;
  // its events arrive on that thread, one at a time.
  virtual std::unique_ptr<Consumer> shard(const Shard& shard) = 0;
  // Every shard has ended: all of them, indexed by Shard::index.
  virtual void merge(std::vector<std::unique_ptr<Consumer>>& shards) = 0;
  // After every analyser's merge: write the result.  `summary` counts the
  // whole regeneration.
  virtual void report(const Summary& summary) {}
};

// Text or bytes a shard writes in stream order whatever the number of
// jobs: straight to `to` when the shard runs in order, else to a file of
// its own that `drainTo` copies to `to` at the merge.  What a text trace,
// a binary trace or any per-event log uses.
class OrderedOutput {
 public:
  OrderedOutput(const Shard& shard, std::FILE* to);
  ~OrderedOutput();
  OrderedOutput(const OrderedOutput&) = delete;
  OrderedOutput& operator=(const OrderedOutput&) = delete;
  std::FILE* file() const { return f_; }
  // Copies what was written aside to the destination (nothing to do when
  // the shard ran in order).  Throws atomx::Error when it cannot.
  void drainTo(std::FILE* to);

 private:
  std::FILE* f_;
  bool aside_;
};

}  // namespace atomx::trace
