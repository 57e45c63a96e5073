#include "driver/Profiles.h"

#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "support/Error.h"

namespace atomx::driver {

analysis::BlockProfile readBlockProfile(const std::vector<std::string>& files) {
  analysis::BlockProfile profile;
  if (files.empty()) return profile;
  for (const std::string& path : files) {
    std::ifstream in(path);
    if (!in) throw Error(path + ": cannot read the profile");
    try {
      const nlohmann::json j = nlohmann::json::parse(in);
      const std::string tool = j.value("tool", "");
      if ((tool != "dyninst" && tool != "prof") || !j.contains("blocks"))
        throw Error(path + ": not the JSON of the dyninst or prof tool (no \"blocks\")");
      for (const nlohmann::json& b : j.at("blocks"))
        if (const uint64_t n = b.at("count").get<uint64_t>())
          profile[std::stoull(b.at("pc").get<std::string>(), nullptr, 16)] += n;
    } catch (const nlohmann::json::exception& e) {
      throw Error(path + ": not the JSON of the dyninst or prof tool (" + e.what() + ")");
    } catch (const std::logic_error&) {
      throw Error(path + ": a block's pc is not a hex address");
    }
  }
  if (profile.empty()) throw Error("the profile counts no executed block");
  return profile;
}

}  // namespace atomx::driver
