#include "instrument/Facts.h"

#include <atomx/facts.h>

#include <cstring>
#include <string>
#include <unordered_map>

namespace atomx::instrument {

namespace {

// NUL-terminated strings, each once, by offset.
struct Strings {
  std::vector<uint8_t> bytes;
  std::unordered_map<std::string, uint32_t> at;
  uint32_t add(const std::string& s) {
    auto [it, fresh] = at.emplace(s, uint32_t(bytes.size()));
    if (fresh) bytes.insert(bytes.end(), s.c_str(), s.c_str() + s.size() + 1);
    return it->second;
  }
};

template <class T> void put(std::vector<uint8_t>& out, const T& record) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(&record);
  out.insert(out.end(), p, p + sizeof record);
}

}  // namespace

std::vector<uint8_t> factsBlob(Engine& engine) {
  const Engine::ApiScope scope(engine);  // the facts are what the public API says
  Strings strings;
  std::vector<uint8_t> procs, blocks, insts;
  AtomxFactsHeader h{ATOMX_FACTS_MAGIC, ATOMX_FACTS_VERSION, 0, 0, 0, strings.add(std::string(program().path()))};
  for (Proc p : program().procs()) {
    const uint32_t firstBlock = h.blocks;
    for (Block b : p.blocks()) {
      const uint32_t firstInst = h.insts;
      for (Inst i : b.insts()) {
        AtomxFactsInst r{};
        r.pc = i.pc(), r.regsRead = i.regsRead(), r.regsWritten = i.regsWritten();
        r.block = h.blocks;
        r.size = uint8_t(i.size()), r.kind = uint8_t(i.kind()), r.memOperands = uint8_t(i.memOperandCount());
        r.access = uint8_t((i.isLoad() ? 1 : 0) | (i.isStore() ? 2 : 0));
        r.accessSize = uint16_t(r.memOperands ? i.accessSize(0) : 0);
        r.mnemonic = strings.add(i.mnemonic()), r.category = strings.add(i.category());
        const Inst::SourceLine line = i.sourceLine();
        r.file = strings.add(line.file), r.line = line.line;
        put(insts, r);
        ++h.insts;
      }
      put(blocks, AtomxFactsBlock{b.pc(), b.endPc(), h.procs, firstInst, h.insts - firstInst, 0});
      ++h.blocks;
    }
    put(procs, AtomxFactsProc{p.pc(), p.endPc(), strings.add(std::string(p.name())), firstBlock, h.blocks - firstBlock, 0});
    ++h.procs;
  }
  std::vector<uint8_t> blob;
  put(blob, h);
  for (const auto* part : {&procs, &blocks, &insts, &strings.bytes}) blob.insert(blob.end(), part->begin(), part->end());
  return blob;
}

size_t embedFacts(Engine& engine) {
  if (!engine.factsWanted()) return 0;
  const std::vector<uint8_t> blob = factsBlob(engine);
  const uint32_t init = engine.declare("atomx_facts_init(char[], long)");
  engine.addFirst(init, Point::ProgramBefore, {Arg(blob.data(), 1, blob.size()), int64_t(blob.size())});
  return blob.size();
}

}  // namespace atomx::instrument
