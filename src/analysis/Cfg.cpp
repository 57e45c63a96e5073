#include "analysis/Cfg.h"

#include <algorithm>
#include <set>
#include <vector>
#include <string_view>
#include <unordered_set>

#include "support/Parallel.h"

namespace atomx::analysis {

bool isNoReturnCallee(const std::string& callee) {
  static const std::set<std::string_view> names = {
      "exit", "_exit", "_Exit", "abort", "__assert_fail", "__stack_chk_fail", "__cxa_throw",
      "__cxa_rethrow", "_Unwind_Resume", "__cxa_bad_cast", "__cxa_bad_typeid", "__cxa_throw_bad_array_new_length",
      "longjmp", "siglongjmp", "__longjmp_chk", "pthread_exit", "__fortify_fail", "__chk_fail", "err", "errx",
      "verr", "verrx", "quick_exit", "std::terminate", "_ZSt9terminatev", "__cxa_call_unexpected",
      "_ZSt20__throw_length_errorPKc", "_ZSt17__throw_bad_allocv", "_ZSt19__throw_logic_errorPKc",
      "_ZSt20__throw_out_of_rangePKc", "_ZSt24__throw_out_of_range_fmtPKcz", "_ZSt16__throw_bad_castv",
      "_ZSt28__throw_bad_array_new_lengthv", "_ZSt21__throw_bad_optional_accessv"};
  std::string_view name = callee;
  if (auto at = name.find('@'); at != std::string_view::npos) name = name.substr(0, at);
  return names.count(name) != 0;
}

std::vector<uint64_t> dispatchTargets(const ir::Procedure& proc, uint64_t jumpAddress) {
  std::vector<uint64_t> targets;
  for (const ir::JumpTable& t : proc.jumpTables) {
    const auto& jumps = t.dispatchJumps;
    if (!jumps.empty() && !std::binary_search(jumps.begin(), jumps.end(), jumpAddress)) continue;
    targets.insert(targets.end(), t.entryTargets.begin(), t.entryTargets.end());
  }
  return targets;
}

void buildCfgs(ir::Program& program, const std::vector<LandingPad>& landingPads) {
  std::vector<uint64_t> pads;
  for (const LandingPad& lp : landingPads) pads.push_back(lp.address);
  std::sort(pads.begin(), pads.end());
  std::unordered_set<uint64_t> noReturnTargets;
  for (const auto& [address, name] : program.pltNames)
    if (isNoReturnCallee(name)) noReturnTargets.insert(address);
  for (const ir::Procedure& p : program.procs)
    if (isNoReturnCallee(p.name)) noReturnTargets.insert(p.start);

  // Each procedure's CFG reads only the sets above and writes only the
  // procedure: over the cores (support/Parallel.h).
  parallelFor(program.procs.size(), [&](size_t index) {
    ir::Procedure& proc = program.procs[index];
    if (!proc.fullyDecoded || proc.insns.empty()) return;
    std::vector<uint64_t> tableTargets;
    for (const ir::JumpTable& t : proc.jumpTables)
      for (uint64_t target : t.entryTargets)
        if (proc.contains(target)) tableTargets.push_back(target);
    std::sort(tableTargets.begin(), tableTargets.end());
    tableTargets.erase(std::unique(tableTargets.begin(), tableTargets.end()), tableTargets.end());

    std::vector<uint64_t> leaders = {proc.start};
    auto noReturn = [&](const x86::Insn& insn) {
      return insn.flow == x86::Flow::Call && noReturnTargets.count(insn.target) != 0;
    };
    for (const x86::Insn& insn : proc.insns) {
      if (insn.isDirectBranch() && proc.contains(insn.target)) leaders.push_back(insn.target);
      if (insn.flow != x86::Flow::Sequential && insn.end() < proc.end) leaders.push_back(insn.end());
    }
    leaders.insert(leaders.end(), proc.externalLeaders.begin(), proc.externalLeaders.end());
    leaders.insert(leaders.end(), tableTargets.begin(), tableTargets.end());
    std::sort(leaders.begin(), leaders.end());
    leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());

    proc.blocks.clear();
    proc.blocks.reserve(leaders.size());
    // Per byte of the procedure: 1 + the index of the block starting there,
    // or 0 (an edge's block; a table this thread reuses).
    thread_local std::vector<uint32_t> blockAt;
    blockAt.assign(proc.size(), 0);
    size_t li = 0, ext = 0;
    auto pad = std::lower_bound(pads.begin(), pads.end(), proc.start);  // both walked in address order
    for (uint32_t i = 0; i < proc.insns.size(); ++i) {
      const x86::Insn& insn = proc.insns[i];
      while (li < leaders.size() && leaders[li] < insn.address) ++li;  // leaders inside an insn were rejected earlier
      if (proc.blocks.empty() || (li < leaders.size() && leaders[li] == insn.address)) {
        ir::Block b;
        b.start = insn.address;
        b.firstInsn = i;
        b.isEntry = insn.address == proc.start;
        while (pad != pads.end() && *pad < insn.address) ++pad;
        b.isLandingPad = pad != pads.end() && *pad == insn.address;
        while (ext < proc.externalLeaders.size() && proc.externalLeaders[ext] < insn.address) ++ext;
        b.isExternalEntry = ext < proc.externalLeaders.size() && proc.externalLeaders[ext] == insn.address;
        proc.blocks.push_back(b);
        blockAt[insn.address - proc.start] = uint32_t(proc.blocks.size());
      }
      ir::Block& b = proc.blocks.back();
      b.insnCount++;
      b.end = insn.end();
    }
    for (ir::Block& b : proc.blocks) b.isAddressTaken = b.isExternalEntry && !b.isLandingPad;
    // An indirect jump no table explains can only reach this procedure's own
    // code if something takes the address of one of its inner blocks: an
    // outside reference, or a RIP-relative operand of its own (a computed
    // goto's `lea label(%rip)`).  Non-PIE code taking its own address as an
    // absolute immediate is not seen here; it only makes the jump count as a
    // tail call rather than unknown (both lead to the virtual exit).
    bool innerAddressTaken = false;
    for (const ir::Block& b : proc.blocks) innerAddressTaken |= b.isAddressTaken && !b.isEntry;
    for (const x86::Insn& insn : proc.insns)
      innerAddressTaken |= insn.isRipRelative() && insn.flow == x86::Flow::Sequential &&
                           proc.contains(insn.target) && insn.target != proc.start;

    proc.exitPreds.clear();
    for (uint32_t bi = 0; bi < proc.blocks.size(); ++bi) {
      ir::Block& b = proc.blocks[bi];
      const x86::Insn& last = proc.insns[b.firstInsn + b.insnCount - 1];
      auto addOut = [&](ir::EdgeKind kind, uint64_t target) {
        for (const ir::OutEdge& e : b.outs)
          if (e.kind == kind && e.target == target) return;
        b.outs.push_back({kind, target});
      };
      // An intra-procedural edge to `target`; a target outside the procedure
      // leaves it (a tail call), one inside that is no block start is unknown.
      auto addEdge = [&](uint64_t target, ir::EdgeKind kind) {
        const int64_t to = proc.contains(target) ? int64_t(blockAt[target - proc.start]) - 1 : -1;
        if (to < 0) {
          addOut(proc.contains(target) ? ir::EdgeKind::UnknownIndirect : ir::EdgeKind::TailCall, target);
          return;
        }
        for (const ir::Edge& e : b.succs)
          if (e.to == uint32_t(to) && e.kind == kind) return;
        b.succs.push_back({uint32_t(to), kind});
      };
      switch (last.flow) {
        case x86::Flow::CondBranch:
          addEdge(last.target, ir::EdgeKind::Taken);
          addEdge(last.end(), ir::EdgeKind::FallThrough);
          break;
        case x86::Flow::Jump:
          addEdge(last.target, ir::EdgeKind::Taken);
          break;
        case x86::Flow::IndirectJump:
          // A table whose dispatch jumps are known serves those only; an
          // indirect jump no table claims leaves the procedure: a tail call
          // through a pointer, unless the procedure takes the address of its
          // own blocks (then it may be a computed goto: unknown).
          for (uint64_t target : dispatchTargets(proc, last.address))
            if (proc.contains(target)) addEdge(target, ir::EdgeKind::JumpTable);
          if (b.succs.empty())
            addOut(innerAddressTaken ? ir::EdgeKind::UnknownIndirect : ir::EdgeKind::TailCall, 0);
          break;
        case x86::Flow::Call:
        case x86::Flow::IndirectCall:
          addOut(ir::EdgeKind::Call, last.flow == x86::Flow::Call ? last.target : 0);
          if (noReturn(last) || last.end() >= proc.end) addOut(ir::EdgeKind::Exit, last.flow == x86::Flow::Call ? last.target : 0);
          else addEdge(last.end(), ir::EdgeKind::FallThrough);
          break;
        case x86::Flow::Return:
          addOut(ir::EdgeKind::Return, 0);
          break;
        case x86::Flow::Stop:
          addOut(ir::EdgeKind::Stop, 0);
          break;
        case x86::Flow::Sequential:
          addEdge(last.end(), ir::EdgeKind::FallThrough);
          break;
      }
    }
    for (uint32_t bi = 0; bi < proc.blocks.size(); ++bi) {
      for (const ir::Edge& e : proc.blocks[bi].succs) proc.blocks[e.to].preds.push_back({bi, e.kind});
      for (const ir::OutEdge& e : proc.blocks[bi].outs)
        if (ir::leadsToExit(e.kind)) proc.exitPreds.push_back({bi, e.kind});
    }
    if (proc.state == ir::ProcState::Disassembled) proc.state = ir::ProcState::CfgBuilt;
  });
}

}  // namespace atomx::analysis
