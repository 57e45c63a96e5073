#include "trace/TraceFiles.h"

#include <atomx/trace.hpp>

#include <atomx/trace_format.h>
#include <zstd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "support/Error.h"
#include "support/Fnv.h"
#include "support/Hex.h"

namespace atomx::trace {

uint64_t fileHash(const std::string& path) {
  Fnv64 h;
  h.addFile(path);
  return h.h;
}

void writeManifest(const std::string& dir, const Manifest& m) {
  const std::string path = dir + "/" + ATOMX_TRACE_MANIFEST;
  std::ofstream out(path);
  if (!out) throw Error(path + ": cannot create the trace's manifest");
  out << ATOMX_TRACE_KEY_VERSION << " " << ATOMX_TRACE_VERSION << "\n"
      << ATOMX_TRACE_KEY_PROGRAM << " " << m.program << "\n"
      << ATOMX_TRACE_KEY_PROGRAM_SIZE << " " << m.programSize << "\n"
      << ATOMX_TRACE_KEY_PROGRAM_HASH << " " << hex16(m.programHash) << "\n"
      << ATOMX_TRACE_KEY_PLACEMENT << " " << hex16(m.placement) << "\n";
  if (m.profile) out << ATOMX_TRACE_KEY_PROFILE << " " << hex16(m.profile) << "\n";
  if (m.data) out << ATOMX_TRACE_KEY_DATA << " 1\n";
  for (size_t k = 0; k < m.others.size(); ++k) {
    const ProgramFile& p = m.others[k];
    out << ATOMX_TRACE_KEY_PROGRAM_N << k + 2 << " " << p.size << " " << hex16(p.hash) << " " << hex16(p.placement) << " "
        << p.path << "\n";
  }
  if (!m.schedule.empty()) out << ATOMX_TRACE_KEY_SCHEDULE << " " << m.schedule << "\n";
  if (!out.flush()) throw Error(path + ": write failed");
}

Manifest readManifest(const std::string& dir) {
  const std::string path = dir + "/" + ATOMX_TRACE_MANIFEST;
  std::ifstream in(path);
  if (!in) throw Error(dir + ": not a trace directory (no " + ATOMX_TRACE_MANIFEST + ")");
  std::map<std::string, std::string> kv;
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) throw Error(path + ": malformed line '" + line + "'");
    kv[line.substr(0, sp)] = line.substr(sp + 1);
  }
  auto need = [&](const char* key) -> const std::string& {
    auto it = kv.find(key);
    if (it == kv.end()) throw Error(path + ": no '" + key + "' line");
    return it->second;
  };
  Manifest m;
  try {
    m.version = uint32_t(std::stoul(need(ATOMX_TRACE_KEY_VERSION)));
    if (m.version != ATOMX_TRACE_VERSION)
      throw Error(path + ": trace format version " + std::to_string(m.version) + ", this atomx reads version " +
                  std::to_string(ATOMX_TRACE_VERSION));
    m.program = need(ATOMX_TRACE_KEY_PROGRAM);
    m.programSize = std::stoull(need(ATOMX_TRACE_KEY_PROGRAM_SIZE));
    m.programHash = std::stoull(need(ATOMX_TRACE_KEY_PROGRAM_HASH), nullptr, 16);
    m.placement = std::stoull(need(ATOMX_TRACE_KEY_PLACEMENT), nullptr, 16);
    if (auto it = kv.find(ATOMX_TRACE_KEY_PROFILE); it != kv.end()) m.profile = std::stoull(it->second, nullptr, 16);
    if (auto it = kv.find(ATOMX_TRACE_KEY_DATA); it != kv.end()) m.data = it->second == "1";
    for (size_t k = 2;; ++k) {
      const auto it = kv.find(ATOMX_TRACE_KEY_PROGRAM_N + std::to_string(k));
      if (it == kv.end()) break;
      std::istringstream fields(it->second);
      ProgramFile p;
      std::string hash, placement;
      if (!(fields >> p.size >> hash >> placement) || !std::getline(fields >> std::ws, p.path) || p.path.empty())
        throw Error(path + ": malformed '" ATOMX_TRACE_KEY_PROGRAM_N + std::to_string(k) + "' line");
      p.hash = std::stoull(hash, nullptr, 16);
      p.placement = std::stoull(placement, nullptr, 16);
      m.others.push_back(std::move(p));
    }
    if (auto it = kv.find(ATOMX_TRACE_KEY_SCHEDULE); it != kv.end()) m.schedule = it->second;
  } catch (const std::logic_error&) {
    throw Error(path + ": malformed number");
  }
  return m;
}

std::vector<Stream> listStreams(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<Stream> streams;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("thread.", 0) != 0 || name.size() < 12 || name.compare(name.size() - 4, 4, ".axt") != 0) continue;
    // thread.TID.axt, or thread.TID-K.axt (a program exec'd in the same thread)
    const std::string id = name.substr(7, name.size() - 11);
    const std::string tid = id.substr(0, id.find('-'));
    if (tid.empty() || id.find_first_not_of("0123456789-") != std::string::npos || tid.size() > 9) continue;
    Stream s;
    s.name = name;
    s.path = e.path().string();
    s.thread = std::stoi(tid);
    streams.push_back(std::move(s));
  }
  if (ec) throw Error(dir + ": cannot list the trace directory: " + ec.message());
  std::sort(streams.begin(), streams.end(), [](const Stream& a, const Stream& b) {
    return a.thread != b.thread ? a.thread < b.thread : a.name < b.name;
  });
  const std::map<std::string, size_t> programs = streamPrograms(dir);
  for (Stream& s : streams)
    if (const auto it = programs.find(s.name); it != programs.end()) s.program = it->second;
  return streams;
}

std::map<std::string, size_t> streamPrograms(const std::string& dir) {
  std::map<std::string, size_t> out;
  std::map<int, size_t> running;  // process -> its program, 1-based (0: untraced)
  std::ifstream in(dir + "/" ATOMX_TRACE_EVENTS);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    uint64_t ns;
    int pid, tid;
    std::string kind, detail;
    if (!(fields >> ns >> pid >> tid >> kind)) continue;  // events() says so
    if (kind == "program") {
      size_t k = 0;
      fields >> k;
      running[pid] = k;
    } else if (kind == "untraced") {
      running[pid] = 0;
    } else if (kind == "stream" && fields >> detail) {
      const auto it = running.find(pid);
      out[detail] = it == running.end() || it->second == 0 ? 0 : it->second - 1;
    }
  }
  return out;
}

std::vector<uint64_t> chunkStarts(const std::string& path) {
  std::vector<uint64_t> starts;
  std::ifstream in(path, std::ios::binary);
  uint64_t raw = 0;
  AtomxTraceChunk h;
  while (in.read(reinterpret_cast<char*>(&h), sizeof h) && h.magic == ATOMX_TRACE_CHUNK_MAGIC && h.sequence == starts.size()) {
    starts.push_back(raw);
    raw += h.rawSize;
    if (!in.seekg(std::streamoff(h.storedSize) + std::streamoff(h.marks) * std::streamoff(sizeof(AtomxTraceMark)), std::ios::cur))
      break;
  }
  return starts;
}

void readStream(Stream& s) {
  s.bytes.clear();
  s.marks.clear();
  s.syncs.clear();
  s.chunks = 0;
  s.complete = false;
  s.childFrom = 0;
  s.problem.clear();
  std::ifstream in(s.path, std::ios::binary);
  if (!in) throw Error(s.path + ": cannot read the stream");
  // The file in one read, and the stream's bytes reserved at once: growing
  // them chunk by chunk copied them over and over (a tenth of a
  // regeneration's time, in page faults).
  in.seekg(0, std::ios::end);
  const std::streamoff length = in.tellg();
  in.seekg(0, std::ios::beg);
  std::vector<uint8_t> file(length > 0 ? size_t(length) : 0);
  if (!in.read(reinterpret_cast<char*>(file.data()), std::streamsize(file.size())))
    throw Error(s.path + ": cannot read the stream");
  uint64_t raw = 0;
  size_t childSyncs = 0;  // the sync marks before a forked child's first chunk of its own: its parent's
  for (size_t at = 0; file.size() - at >= sizeof(AtomxTraceChunk);) {
    AtomxTraceChunk h;
    std::memcpy(&h, file.data() + at, sizeof h);
    const uint64_t next = uint64_t(at) + sizeof h + h.storedSize + uint64_t(h.marks) * sizeof(AtomxTraceMark);
    if (h.magic != ATOMX_TRACE_CHUNK_MAGIC || next > file.size()) break;
    raw += h.rawSize;
    at = size_t(next);
  }
  // (A damaged header's size reserves no more than a plausible ratio allows.)
  s.bytes.reserve(size_t(std::min<uint64_t>(raw, uint64_t(file.size()) * 256 + (1u << 20))));
  size_t at = 0;
  while (at < file.size()) {
    AtomxTraceChunk h;
    if (file.size() - at < sizeof h) {
      s.problem = "the stream ends inside chunk " + std::to_string(s.chunks) + "'s header (the process was killed?)";
      break;
    }
    std::memcpy(&h, file.data() + at, sizeof h);
    if (h.magic != ATOMX_TRACE_CHUNK_MAGIC || h.version != ATOMX_TRACE_VERSION || h.sequence != s.chunks) {
      s.problem = "chunk " + std::to_string(s.chunks) + " has a bad header";
      break;
    }
    const uint64_t markBytes = uint64_t(h.marks) * sizeof(AtomxTraceMark);
    if (file.size() - at - sizeof h < h.storedSize + markBytes) {
      s.problem = "the stream ends inside chunk " + std::to_string(s.chunks) + " (the process was killed?)";
      break;
    }
    const uint8_t* data = file.data() + at + sizeof h;
    const uint8_t* marks = data + h.storedSize;
    if (atomx_trace_checksum_more(atomx_trace_checksum(data, h.storedSize), marks, markBytes) != h.checksum) {
      s.problem = "chunk " + std::to_string(s.chunks) + " is damaged (checksum)";
      break;
    }
    if (h.codec & ATOMX_TRACE_CHUNK_CHILD) s.childFrom = s.bytes.size(), childSyncs = s.syncs.size();
    bool marksFit = true;
    for (uint32_t k = 0; k < h.marks; ++k) {
      AtomxTraceMark m;
      std::memcpy(&m, marks + k * sizeof m, sizeof m);
      if (m.kind == ATOMX_TRACE_MARK_SYNC_ENTERED || m.kind == ATOMX_TRACE_MARK_SYNC_RETURNED) {
        marksFit &= m.offset <= h.rawSize;
        s.syncs.push_back({s.bytes.size() + m.offset, m.kind, m.signo, m.pc});
        continue;
      }
      marksFit &= m.offset <= h.rawSize && (s.marks.empty() || s.marks.back().pos <= s.bytes.size() + m.offset);
      if (m.kind == ATOMX_TRACE_MARK_REGISTER) {  // the register of the delivery before it
        SignalMark* d = s.marks.empty() ? nullptr : &s.marks.back();
        marksFit &= d && d->pos == s.bytes.size() + m.offset && m.signo < 16 &&
                    (d->kind == ATOMX_TRACE_MARK_DELIVERED || d->kind == ATOMX_TRACE_MARK_FAULTED);
        if (d && m.signo < 16) d->regMask |= uint16_t(1u << m.signo), d->regs[m.signo] = m.pc;
        continue;
      }
      s.marks.push_back({s.bytes.size() + m.offset, m.kind, m.signo, m.pc});
    }
    if (!marksFit) {
      s.problem = "chunk " + std::to_string(s.chunks) + " has signal marks out of order";
      break;
    }
    const uint32_t codec = h.codec & ATOMX_TRACE_CODEC_MASK;
    if (codec == ATOMX_TRACE_CODEC_RAW && h.rawSize == h.storedSize) {
      s.bytes.insert(s.bytes.end(), data, data + h.storedSize);
    } else if (codec == ATOMX_TRACE_CODEC_ZSTD) {
      const size_t at0 = s.bytes.size();
      s.bytes.resize(at0 + h.rawSize);
      const size_t n = ZSTD_decompress(s.bytes.data() + at0, h.rawSize, data, h.storedSize);
      if (ZSTD_isError(n) || n != h.rawSize) {
        s.bytes.resize(at0);
        s.problem = "chunk " + std::to_string(s.chunks) + " does not decompress";
        break;
      }
    } else {
      s.problem = "chunk " + std::to_string(s.chunks) + " uses an unknown codec";
      break;
    }
    at += sizeof h + h.storedSize + markBytes;
    ++s.chunks;
    s.complete = h.codec & ATOMX_TRACE_CHUNK_FINAL;
    if (s.complete && at < file.size()) {
      s.problem = "bytes after the final chunk";
      break;
    }
  }
  for (size_t k = 0; k < childSyncs; ++k) s.syncs[k].inherited = true;
  if (s.problem.empty() && !s.complete)
    s.problem = "the stream ends after chunk " + std::to_string(s.chunks) + " without its final chunk (the process was killed?)";
}

namespace {
std::vector<std::pair<uint64_t, uint64_t>> sorted(const analysis::BlockProfile& profile) {
  std::vector<std::pair<uint64_t, uint64_t>> v(profile.begin(), profile.end());
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

uint64_t profileHash(const analysis::BlockProfile& profile) {
  Fnv64 h;
  for (const auto& [pc, n] : sorted(profile)) {
    h.addWord(pc);
    h.addWord(n);
  }
  return h.h ? h.h : 1;
}

void writeProfile(const std::string& dir, const analysis::BlockProfile& profile) {
  const std::string path = dir + "/" + ATOMX_TRACE_PROFILE;
  std::ofstream out(path);
  for (const auto& [pc, n] : sorted(profile)) out << std::hex << pc << " " << std::dec << n << "\n";
  if (!out.flush()) throw Error(path + ": cannot write the trace's profile");
}

analysis::BlockProfile readProfile(const std::string& dir) {
  const std::string path = dir + "/" + ATOMX_TRACE_PROFILE;
  std::ifstream in(path);
  if (!in) throw Error(path + ": the trace's profile is missing");
  analysis::BlockProfile profile;
  uint64_t pc, n;
  while (in >> std::hex >> pc >> std::dec >> n) profile[pc] = n;
  if (!in.eof()) throw Error(path + ": malformed line");
  return profile;
}

std::vector<Event> events(const std::string& dir) {
  std::vector<Event> out;
  std::ifstream in(dir + "/" ATOMX_TRACE_EVENTS);
  std::string line;
  for (unsigned n = 1; std::getline(in, line); ++n) {
    std::istringstream fields(line);
    Event e;
    if (!(fields >> e.ns >> e.pid >> e.thread >> e.kind))
      throw Error(dir + "/" ATOMX_TRACE_EVENTS ":" + std::to_string(n) + ": not an event line");
    std::getline(fields >> std::ws, e.detail);
    out.push_back(std::move(e));
  }
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) { return a.ns < b.ns; });
  return out;
}

std::vector<UntracedProcess> untracedProcesses(const std::string& dir) {
  std::vector<UntracedProcess> out;
  for (const Event& e : events(dir)) {
    if (e.kind != "untraced") continue;
    UntracedProcess p{e.pid, {}};
    std::istringstream words(e.detail);
    for (std::string w; words >> w;) {
      std::string plain;  // \ooo: driver::escapeWord
      for (size_t i = 0; i < w.size(); ++i)
        if (w[i] == '\\' && i + 3 < w.size() && std::isdigit(static_cast<unsigned char>(w[i + 1])))
          plain += char(std::stoi(w.substr(i + 1, 3), nullptr, 8)), i += 3;
        else
          plain += w[i];
      if (plain == std::string(1, '\0')) plain.clear();
      p.words.push_back(std::move(plain));
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::string> streamlessThreads(const std::string& dir, uint64_t& lost) {
  lost = 0;
  const std::vector<Event> log = events(dir);
  std::vector<std::string> out;
  for (size_t i = 0; i < log.size(); ++i) {
    const Event& t = log[i];
    if (t.kind != "thread" || t.detail == "closed") continue;  // closed: it records nothing
    // Its stream: a `stream` line of its process naming the thread's file
    // (another thread may open it: the exiting one writes every stream),
    // before the thread's next start (a program exec'd in it starts it again).
    const std::string file = "thread." + std::to_string(t.thread);
    bool stream = false, ended = false, closing = false, exited = false;
    for (size_t j = i + 1; j < log.size(); ++j) {
      const Event& e = log[j];
      if (e.pid != t.pid) continue;
      if (e.thread == t.thread && e.kind == "thread") break;
      stream |= e.kind == "stream" && e.detail.rfind(file, 0) == 0 &&
                (e.detail.compare(file.size(), 1, ".") == 0 || e.detail.compare(file.size(), 1, "-") == 0);
      ended |= e.thread == t.thread && e.kind == "thread-end";
      exited |= e.kind == "exit" || e.kind == "killed" || e.kind == "exec";
    }
    if (stream) continue;
    // Its process's streams closed before it started: it records nothing.
    for (size_t j = 0; j < i; ++j) {
      const Event& e = log[j];
      if (e.pid != t.pid) continue;
      if (e.kind == "exit" || e.kind == "exec") closing = true;
      if (e.kind == "exec-failed" || e.kind == "process") closing = false;
    }
    if (closing) continue;
    const std::string who = "thread " + std::to_string(t.thread) + " (process " + std::to_string(t.pid) + ")";
    ++lost;
    if (ended)
      out.push_back(who + ": ended (thread-end in the event log), but left no stream");
    else if (exited)
      out.push_back(who + ": its process ended (exit or exec in the event log), but the thread left no stream");
    else
      out.push_back(who + ": started (thread in the event log) but left no stream: its process was killed (its log has no"
                    " exit) before the thread filled its first buffer or ended, and the bytes it recorded were in memory"
                    " (SIGKILL gives no chance to write them)");
  }
  return out;
}

}  // namespace atomx::trace
