// The privileged schedule log's file, DIR/schedule (include/atomx/
// trace_format.h, AtomxScheduleHeader, AtomxScheduleFrame,
// AtomxScheduleRecord; docs/trace.md, "The privileged schedule log"): the
// one owner of its frames, both ways.  The collector (driver/ScheduleLog)
// writes each drained batch as scheduleFrame; every reader goes through
// readScheduleFrames or readSchedule, never decompressing on its own.
#pragma once

#include <atomx/trace_format.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace atomx::trace {

// The file's header (version ATOMX_SCHEDULE_VERSION) with `lost` switches.
AtomxScheduleHeader scheduleHeader(uint64_t lost);
// One frame: its AtomxScheduleFrame and the n records compressed (zstd), as
// bytes to write whole.  n is 1 .. ATOMX_SCHEDULE_FRAME_RECORDS.
std::string scheduleFrame(const AtomxScheduleRecord* records, size_t n);

// Whether each record follows the one before it on its CPU: the thread a
// switch takes off a CPU is the one the CPU's last record put on it (its
// IN), or, when that one put an untraced task on it, an untraced one too.
// A record that does not is preceded by switches the log lacks: the
// kernel's tracepoint did not run the eBPF program for them (seen under
// heavy load, in other tools too), or the ring buffer was full.
class ScheduleChain {
 public:
  // false: switches are missing on r's CPU between its last record and r.
  bool follows(const AtomxScheduleRecord& r);
  uint64_t missing() const { return missing_; }  // records that did not follow
  uint64_t firstNs() const { return firstNs_; }  // the first such record's time
  uint32_t firstCpu() const { return firstCpu_; }

 private:
  std::vector<int64_t> running_;  // per CPU: its current task's tid, 0 untraced, -1 not yet seen
  uint64_t missing_ = 0, firstNs_ = 0;
  uint32_t firstCpu_ = 0;
};

struct ScheduleFile {
  std::vector<AtomxScheduleRecord> records;  // in time order (ns; stable)
  uint64_t lost = 0;                         // switches the ring buffer had no room for
};

// Streams the log at `path`, one call per frame with its records in the
// order they were written (a log of version 1: one call with them all);
// returns its header.  Throws atomx::InputError, one line naming the file
// and the byte offset, when the file is missing or not a schedule log, of
// another version, or when a frame is cut short (the file ends inside it)
// or damaged (its magic, its checksum, its decompression).
AtomxScheduleHeader readScheduleFrames(const std::string& path,
                                       const std::function<void(const AtomxScheduleRecord*, size_t)>& frame);
// The whole log of trace `dir`, sorted by time; throws as above.
ScheduleFile readSchedule(const std::string& dir);

}  // namespace atomx::trace
