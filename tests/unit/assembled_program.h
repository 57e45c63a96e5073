// A test program written in assembly: assembled and linked with
// --emit-relocs into a temporary directory (removed again by the
// destructor), then analysed into the program model.  Shared by the unit
// tests that check analyses on hand-written code (flags liveness, CFG
// edges); a test suite builds it once in SetUpTestSuite.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include "analysis/ProgramModel.h"
#include "elf/ElfImage.h"


namespace atomx::testing {

// A procedure `table` whose gcc-style jump table (lea, movslq, add, jmp
// *%rax at label m_table) sends one case to its .cold part, which reads ZF
// and %rsi before writing either: control leaves the procedure there, so
// both are live before the dispatch jump (flags and register liveness).
inline constexpr char kColdTableAsm[] = R"(
        .text
        .type table, @function
table:  cmp $1, %edi
        ja 2f
        lea .Ltable(%rip), %rdx
        mov %edi, %edi
        movslq (%rdx,%rdi,4), %rax
        add %rdx, %rax
m_table:
        jmp *%rax
.Ltable_ret: ret
2:      ret
        .size table, .-table

        .type table.cold, @function
table.cold: mov %rsi, %rax
        jne 1f
1:      ret
        .size table.cold, .-table.cold

        .section .rodata
        .align 4
.Ltable: .long .Ltable_ret-.Ltable
        .long table.cold-.Ltable
        .text
)";

class AssembledProgram {
 public:
  explicit AssembledProgram(const char* source) {
    char dir[] = "/tmp/atomx-asm.XXXXXX";
    if (!mkdtemp(dir)) return;
    dir_ = dir;
    std::ofstream(dir_ + "/p.s") << source;
    if (std::system(("cc -Wl,--emit-relocs -o " + dir_ + "/p " + dir_ + "/p.s").c_str()) != 0) return;
    image_ = std::make_unique<elf::ElfImage>(elf::ElfImage::load(dir_ + "/p"));
    model_ = analysis::analyzeProgram(*image_);
  }
  ~AssembledProgram() {
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }
  AssembledProgram(const AssembledProgram&) = delete;
  AssembledProgram& operator=(const AssembledProgram&) = delete;

  // False when the program could not be assembled (the tests then skip).
  bool ok() const { return model_ != nullptr; }
  // The address of symbol `name` (a `mark:` label or a procedure), 0 if none.
  uint64_t address(const std::string& name) const {
    for (const elf::Symbol& s : image_->symbols())
      if (s.name == name) return s.value;
    return 0;
  }
  const elf::ElfImage& image() const { return *image_; }
  const analysis::ProgramModel& model() const { return *model_; }

 private:
  std::string dir_;
  std::unique_ptr<elf::ElfImage> image_;
  std::unique_ptr<analysis::ProgramModel> model_;
};

// A test suite over one assembled program, built once for the suite (and
// skipped when it cannot be): Derived gives `static const char* source()`.
template <class Derived>
class AssembledProgramTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { program_ = new AssembledProgram(Derived::source()); }
  static void TearDownTestSuite() {
    delete program_;
    program_ = nullptr;
  }
  void SetUp() override {
    if (!program_->ok()) GTEST_SKIP() << "cannot assemble the test program";
  }
  const analysis::ProgramModel& model() const { return program_->model(); }
  // The procedure holding label `mark`, and the index of its instruction there.
  std::pair<const ir::Procedure*, uint32_t> at(const std::string& mark) const {
    const uint64_t addr = program_->address(mark);
    EXPECT_NE(addr, 0u) << mark;
    const ir::Procedure* p = model().program.procAt(addr);
    EXPECT_NE(p, nullptr) << mark;
    return {p, p ? uint32_t(p->insnIndexAt(addr)) : 0};
  }

  inline static AssembledProgram* program_ = nullptr;
};

}  // namespace atomx::testing
