#include "trace/ScheduleFile.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "support/Error.h"

namespace atomx::trace {

AtomxScheduleHeader scheduleHeader(uint64_t lost) {
  return AtomxScheduleHeader{ATOMX_SCHEDULE_MAGIC, ATOMX_SCHEDULE_VERSION, uint32_t(sizeof(AtomxScheduleRecord)), 0, lost};
}

std::string scheduleFrame(const AtomxScheduleRecord* records, size_t n) {
  if (n == 0 || n > ATOMX_SCHEDULE_FRAME_RECORDS) throw InternalError("a schedule frame of " + std::to_string(n) + " records");
  const size_t raw = n * sizeof(AtomxScheduleRecord);
  std::string out(sizeof(AtomxScheduleFrame) + ZSTD_compressBound(raw), '\0');
  const size_t stored = ZSTD_compress(out.data() + sizeof(AtomxScheduleFrame), out.size() - sizeof(AtomxScheduleFrame),
                                      records, raw, 3);
  if (ZSTD_isError(stored)) throw InternalError(std::string("zstd: ") + ZSTD_getErrorName(stored));
  const AtomxScheduleFrame f{ATOMX_SCHEDULE_FRAME_MAGIC, uint32_t(n), uint32_t(stored),
                             atomx_trace_checksum(out.data() + sizeof f, stored)};
  std::memcpy(out.data(), &f, sizeof f);
  out.resize(sizeof f + stored);
  return out;
}

AtomxScheduleHeader readScheduleFrames(const std::string& path,
                                       const std::function<void(const AtomxScheduleRecord*, size_t)>& frame) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": no schedule log (the trace was recorded without privilege, or by an atomx built without libbpf)");
  AtomxScheduleHeader h{};
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h) || h.magic != ATOMX_SCHEDULE_MAGIC)
    throw InputError(path + ": not a schedule log");
  if ((h.version != ATOMX_SCHEDULE_VERSION && h.version != 1) || h.recordSize != sizeof(AtomxScheduleRecord))
    throw InputError(path + ": a schedule log of version " + std::to_string(h.version) + " with records of " +
                     std::to_string(h.recordSize) + " bytes (this atomx reads versions 1 and " +
                     std::to_string(ATOMX_SCHEDULE_VERSION) + ", " + std::to_string(sizeof(AtomxScheduleRecord)) + " bytes)");
  std::vector<AtomxScheduleRecord> records;
  if (h.version == 1) {  // the records, uncompressed
    AtomxScheduleRecord r;
    while (in.read(reinterpret_cast<char*>(&r), sizeof r)) records.push_back(r);
    if (in.gcount() != 0)
      throw InputError(path + ": the schedule log ends inside the record at byte " +
                       std::to_string(sizeof h + records.size() * sizeof r));
    if (!records.empty()) frame(records.data(), records.size());
    return h;
  }
  std::string stored;
  uint64_t at = sizeof h;
  for (AtomxScheduleFrame f; in.read(reinterpret_cast<char*>(&f), sizeof f) || in.gcount() != 0; at += sizeof f + f.storedSize) {
    const std::string where = path + ": the schedule log's frame at byte " + std::to_string(at);
    if (in.gcount() != sizeof f)
      throw InputError(where + " is cut short (" + std::to_string(in.gcount()) + " of its header's " +
                       std::to_string(sizeof f) + " bytes)");
    if (f.magic != ATOMX_SCHEDULE_FRAME_MAGIC || f.records == 0 || f.records > ATOMX_SCHEDULE_FRAME_RECORDS)
      throw InputError(where + " is damaged (a bad header)");
    stored.resize(f.storedSize);
    if (!in.read(stored.data(), f.storedSize))
      throw InputError(where + " is cut short (" + std::to_string(in.gcount()) + " of its " + std::to_string(f.storedSize) +
                       " bytes)");
    if (atomx_trace_checksum(stored.data(), stored.size()) != f.checksum)
      throw InputError(where + " is damaged (its checksum differs)");
    records.resize(f.records);
    const size_t raw = f.records * sizeof(AtomxScheduleRecord);
    const size_t n = ZSTD_decompress(records.data(), raw, stored.data(), stored.size());
    if (ZSTD_isError(n) || n != raw) throw InputError(where + " is damaged (it does not decompress to its records)");
    frame(records.data(), records.size());
  }
  return h;
}

bool ScheduleChain::follows(const AtomxScheduleRecord& r) {
  if (r.cpu >= running_.size()) running_.resize(r.cpu + 1, -1);
  int64_t& on = running_[r.cpu];
  const int64_t off = r.flags & ATOMX_SCHEDULE_OUT ? int64_t(r.prevTid) : 0;
  const bool ok = on < 0 || on == off;
  on = r.flags & ATOMX_SCHEDULE_IN ? int64_t(r.nextTid) : 0;
  if (!ok && missing_++ == 0) firstNs_ = r.ns, firstCpu_ = r.cpu;
  return ok;
}

ScheduleFile readSchedule(const std::string& dir) {
  ScheduleFile f;
  f.lost = readScheduleFrames(dir + "/" ATOMX_TRACE_SCHEDULE, [&](const AtomxScheduleRecord* r, size_t n) {
             f.records.insert(f.records.end(), r, r + n);
           }).lost;
  std::stable_sort(f.records.begin(), f.records.end(),
                   [](const AtomxScheduleRecord& a, const AtomxScheduleRecord& b) { return a.ns < b.ns; });
  return f;
}

}  // namespace atomx::trace
