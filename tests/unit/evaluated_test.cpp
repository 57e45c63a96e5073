// Evaluated predicates (docs/trace.md; analysis/DataSlices.h,
// analysis/TracePlan.h): a data trace's plan on real programs -- the
// counted loops of tests/trace/loops.c, the pitfall programs, the corpus's
// gzip and bzip2 -- checked by the two independent checkers: checkSlices
// (every register a predicate's flag setter reads is known there) and
// tracingProblems (the witnesses, with those predicates taken as evaluated,
// solve the tracing problem).  Must-fail: the same placement judged as if
// the predicates were not evaluated has a witness-free cycle through a
// predicate, and slices that lose a loop bound's record leave a needed
// register unknown.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>

#include "analysis/DataSlices.h"
#include "analysis/ProgramModel.h"
#include "analysis/TracePlan.h"
#include "analysis/TracingCheck.h"
#include "elf/ElfImage.h"

namespace atomx {
namespace {

std::filesystem::path buildDir() { return std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path(); }

struct Planned {
  std::unique_ptr<elf::ElfImage> image;
  std::unique_ptr<analysis::ProgramModel> model;
  analysis::TracePlan plan;
};

Planned plan(const std::filesystem::path& path) {
  Planned r;
  r.image = std::make_unique<elf::ElfImage>(elf::ElfImage::load(path.string()));
  r.model = analysis::analyzeProgram(*r.image);
  r.plan = analysis::planTrace(r.model->program, nullptr, &r.model->decoder);
  return r;
}

std::map<std::pair<uint32_t, uint32_t>, uint32_t> instrumented(const analysis::ProcTrace& t) {
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> m;
  for (size_t k = 0; k < t.graph.arcs.size(); ++k)
    if (t.plan.witness[k] >= 0) m[{t.graph.arcs[k].from, t.graph.arcs[k].to}] = uint32_t(t.plan.witness[k]);
  return m;
}

std::vector<bool> evaluated(const analysis::ProcTrace& t) {
  std::vector<bool> e(t.slices.evaluated.size());
  for (size_t b = 0; b < e.size(); ++b) e[b] = t.slices.evaluated[b] != x86::kNoCondition;
  return e;
}

// Both checkers on every traced procedure; returns the evaluated predicates.
int checkProgram(const std::filesystem::path& path) {
  const Planned p = plan(path);
  int count = 0;
  for (const ir::Procedure& proc : p.model->program.procs) {
    const analysis::ProcTrace& t = p.plan.procs[proc.id];
    if (!t.traced) continue;
    EXPECT_EQ(analysis::checkSlices(proc, t.slices), "") << path << " " << proc.name;
    EXPECT_EQ(analysis::tracingProblems(proc, instrumented(t), evaluated(t)), std::vector<std::string>{})
        << path << " " << proc.name;
    for (bool e : evaluated(t)) count += e;
  }
  return count;
}

const ir::Procedure* procNamed(const Planned& p, const std::string& name) {
  for (const ir::Procedure& proc : p.model->program.procs)
    if (proc.name == name) return &proc;
  return nullptr;
}

TEST(EvaluatedPredicates, CountedLoopsAreEvaluatedAndCheck) {
  const std::filesystem::path loops = buildDir() / "tests/trace/loops";
  if (!std::filesystem::exists(loops)) GTEST_SKIP() << "tests/trace/loops not built";
  EXPECT_GT(checkProgram(loops), 0);
  const Planned p = plan(loops);
  for (const char* name : {"up", "down", "from_memory", "dec_test", "signed_loop", "unsigned_loop", "with_break",
                           "nested", "spin_asm"}) {
    const ir::Procedure* proc = procNamed(p, name);
    ASSERT_NE(proc, nullptr) << name;
    const analysis::ProcTrace& t = p.plan.procs[proc->id];
    int n = 0;
    for (bool e : evaluated(t)) n += e;
    EXPECT_GT(n, 0) << name << ": its loop's branch is not evaluated";
    // Judged as if nothing were evaluated, the loop has no witness.
    const std::vector<std::string> problems = analysis::tracingProblems(*proc, instrumented(t));
    bool cycle = false;
    for (const std::string& s : problems) cycle |= s.find("lies on a cycle with no witness") != std::string::npos;
    EXPECT_TRUE(cycle) << name;
  }
}

TEST(EvaluatedPredicates, ALostBoundIsNamed) {
  const std::filesystem::path loops = buildDir() / "tests/trace/loops";
  if (!std::filesystem::exists(loops)) GTEST_SKIP() << "tests/trace/loops not built";
  const Planned p = plan(loops);
  const ir::Procedure* proc = procNamed(p, "from_memory");
  ASSERT_NE(proc, nullptr);
  analysis::DataSlices s = p.plan.procs[proc->id].slices;
  ASSERT_EQ(analysis::checkSlices(*proc, s), "");
  bool dropped = false;  // the bound's load: its value is recorded after it
  for (analysis::InsnSlice& in : s.insns)
    if (in.load && in.recordAfter) in.recordAfter = 0, dropped = true;
  ASSERT_TRUE(dropped);
  EXPECT_NE(analysis::checkSlices(*proc, s).find("needed but not known"), std::string::npos);
}

TEST(EvaluatedPredicates, PlansCheckOnPitfallProgramsAndCorpus) {
  int checked = 0;
  for (const char* name : {"funcptrs", "switch_tables", "exceptions", "tls_threads", "signals_setjmp", "computed_goto",
                           "cold_parts", "tailcalls"}) {
    const std::filesystem::path path = buildDir() / "tests/programs/O2" / name;
    if (!std::filesystem::exists(path)) continue;
    checkProgram(path);
    ++checked;
  }
  const char* env = std::getenv("ATOMX_CORPUS_DIR");
  const char* home = std::getenv("HOME");
  const std::filesystem::path corpus =
      env ? std::filesystem::path(env) / "bin" : std::filesystem::path(home ? home : "/") / ".cache/atomx-corpus/bin";
  for (const char* name : {"gzip-gcc-O2", "bzip2-gcc-O2"}) {
    if (!std::filesystem::exists(corpus / name)) continue;
    EXPECT_GT(checkProgram(corpus / name), 0) << name;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no program built";
}

}  // namespace
}  // namespace atomx
