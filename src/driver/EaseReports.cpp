#include "driver/EaseReports.h"

#include <atomx/ease_html.hpp>
#include <atomx/ease_report.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/Error.h"

namespace atomx::driver {

namespace {

// One ease.json file back into the data ease::writeJson wrote it from.
ease::Data read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot read");
  ease::Data d;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    if (j.value("tool", "") != "ease") throw Error(path + ": not an ease.json file (no \"tool\": \"ease\")");
    for (const auto& p : j.at("programs")) d.programs.push_back(p.get<std::string>());
    d.isStatic = j.value("weighting", "dynamic") == "static";
    for (const auto& [k, v] : j.at("totals").items()) d.tables["total"][k] = v.get<long>();
    for (const auto& [name, t] : j.at("tables").items())
      for (const auto& [k, v] : t.items()) d.tables[name][k] = v.get<long>();
    for (const auto& p : j.at("procs")) {
      d.procs.push_back({p.at("program"), p.at("name"), p.at("instructions"), p.at("bytes"), p.at("Dr"), p.at("Dw"), p.at("Bc"), {}});
      if (p.contains("causes"))
        for (const auto& [k, v] : p.at("causes").items()) d.procs.back().causes[k] = v.get<long>();
    }
    for (const auto& b : j.at("branches")) {
      ease::BranchRow r;
      r.program = b.at("program"), r.proc = b.at("proc"), r.condition = b.at("condition");
      r.pc = std::stoull(b.at("pc").get<std::string>(), nullptr, 16);
      r.executed = b.at("executed");
      r.counted = !b.at("taken").is_null();
      r.taken = r.counted ? b.at("taken").get<long>() : 0;
      d.branches.push_back(r);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not an ease.json file (" + e.what() + ")");
  }
  return d;
}

FILE* create(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw Error(path + ": cannot write (" + std::strerror(errno) + ")");
  return f;
}

}  // namespace

void mergeEaseReports(const std::vector<std::string>& inputs, const std::string& dir, long top) {
  ease::Data all;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ease::Data d = read(inputs[k]);
    if (k && d.isStatic != all.isStatic)
      throw Error(inputs[k] + ": " + (d.isStatic ? "static" : "dynamic") + " measurements, and " + inputs[0] + ": " +
                  (all.isStatic ? "static" : "dynamic") + " ones: merge one kind at a time");
    all.merge(d);
  }
  FILE* f = create(dir + "/ease.out");
  ease::writeText(f, all, top);
  std::fclose(f);
  f = create(dir + "/ease.json");
  ease::writeJson(f, all, [](atomx::JsonWriter&) {});
  std::fclose(f);
  f = create(dir + "/ease.html");
  ease::writeHtml(f, all);
  std::fclose(f);
  std::fprintf(stderr, "atomx: ease-report: %zu run(s) of %s merged into %s/ease.out, ease.json, ease.html\n",
               inputs.size(), ease::programList(all).c_str(), dir.c_str());
}

void diffEaseReports(const std::string& a, const std::string& b, const std::string& dir, long top) {
  const ease::Data x = read(a), y = read(b);
  if (x.isStatic != y.isStatic)
    throw Error(a + " holds " + (x.isStatic ? "static" : "dynamic") + " measurements, " + b + " " +
                (y.isStatic ? "static" : "dynamic") + " ones: compare one kind with the same kind");
  FILE* f = create(dir + "/ease-diff.out");
  ease::writeDiffText(f, x, y, top);
  std::fclose(f);
  f = create(dir + "/ease-diff.json");
  ease::writeDiffJson(f, x, y);
  std::fclose(f);
  std::fprintf(stderr, "atomx: ease-report: %s (A) against %s (B): %s/ease-diff.out, ease-diff.json\n", a.c_str(), b.c_str(),
               dir.c_str());
}

}  // namespace atomx::driver
