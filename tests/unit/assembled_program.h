// A test program written in assembly: assembled and linked with
// --emit-relocs into a temporary directory (removed again by the
// destructor), then analysed into the program model.  Shared by the unit
// tests that check analyses on hand-written code (flags liveness, CFG
// edges); a test suite builds it once in SetUpTestSuite.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "analysis/ProgramModel.h"
#include "elf/ElfImage.h"

namespace atomx::testing {

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
  const elf::ElfImage& image() const { return *image_; }
  const analysis::ProgramModel& model() const { return *model_; }

 private:
  std::string dir_;
  std::unique_ptr<elf::ElfImage> image_;
  std::unique_ptr<analysis::ProgramModel> model_;
};

}  // namespace atomx::testing
