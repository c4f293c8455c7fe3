#include "taas/summary/event_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "event.pb.h"
#include "taas/crc32c/crc32c.h"

namespace taas::summary {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

}  // namespace

absl::StatusOr<std::unique_ptr<EventWriter>> EventWriter::Create(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create summary dir " + dir + ": " + ec.message());
  // Seconds plus pid keep two writers started in the same second from sharing a file.
  const std::string path =
      (std::filesystem::path(dir) /
       ("events.out.tfevents." + std::to_string(static_cast<std::int64_t>(Now())) + "." +
        Hostname() + "." + std::to_string(::getpid())))
          .string();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) return absl::InternalError("cannot create " + path + ": " + std::strerror(errno));
  std::unique_ptr<EventWriter> writer(new EventWriter(file, path));
  Event event;
  event.set_wall_time(Now());
  event.set_file_version("brain.Event:2");
  TAAS_RETURN_IF_ERROR(writer->WriteRecord(event.SerializeAsString()));
  return writer;
}

EventWriter::~EventWriter() { std::fclose(file_); }

Histogram Histogram::Of(std::span<const float> values, int buckets) {
  Histogram h;
  if (values.empty()) return h;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  h.min = *lo;
  h.max = *hi;
  h.num = static_cast<double>(values.size());
  const int count = h.max > h.min ? std::max(buckets, 1) : 1;
  const double width = (h.max - h.min) / count;
  h.bucket.assign(static_cast<std::size_t>(count), 0.0);
  for (int i = 0; i < count; ++i) h.bucket_limit.push_back(h.min + width * (i + 1));
  h.bucket_limit.back() = h.max;  // exactly, whatever the rounding of the sums above
  for (const float v : values) {
    h.sum += v;
    h.sum_squares += static_cast<double>(v) * v;
    const int i = width > 0 ? static_cast<int>((v - h.min) / width) : 0;
    h.bucket[static_cast<std::size_t>(std::clamp(i, 0, count - 1))] += 1;
  }
  return h;
}

absl::Status EventWriter::WriteSummary(std::int64_t step, const Scalars& scalars,
                                       const Histograms& histograms) {
  Event event;
  event.set_wall_time(Now());
  event.set_step(step);
  for (const auto& [tag, value] : scalars) {
    auto* v = event.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(value);
  }
  for (const auto& [tag, h] : histograms) {
    auto* v = event.mutable_summary()->add_value();
    v->set_tag(tag);
    auto* histo = v->mutable_histo();
    histo->set_min(h.min);
    histo->set_max(h.max);
    histo->set_num(h.num);
    histo->set_sum(h.sum);
    histo->set_sum_squares(h.sum_squares);
    for (double limit : h.bucket_limit) histo->add_bucket_limit(limit);
    for (double count : h.bucket) histo->add_bucket(count);
  }
  return WriteRecord(event.SerializeAsString());
}

absl::Status EventWriter::WriteRecord(const std::string& bytes) {
  char header[12];
  const std::uint64_t length = bytes.size();
  std::memcpy(header, &length, 8);
  const std::uint32_t length_crc = crc32c::Mask(crc32c::Value(header, 8));
  std::memcpy(header + 8, &length_crc, 4);
  const std::uint32_t data_crc = crc32c::Mask(crc32c::Value(bytes));
  if (std::fwrite(header, 1, 12, file_) != 12 ||
      std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size() ||
      std::fwrite(&data_crc, 1, 4, file_) != 4 || std::fflush(file_) != 0) {
    return absl::InternalError("cannot write " + path_ + ": " + std::strerror(errno));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ReadEvent>> ReadEventFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string data = buffer.str();
  std::vector<ReadEvent> out;
  std::size_t pos = 0;
  while (pos < data.size()) {
    if (data.size() - pos < 12) return absl::DataLossError(path + ": truncated record header");
    std::uint64_t length;
    std::uint32_t length_crc, data_crc;
    std::memcpy(&length, data.data() + pos, 8);
    std::memcpy(&length_crc, data.data() + pos + 8, 4);
    if (crc32c::Mask(crc32c::Value(data.data() + pos, 8)) != length_crc) {
      return absl::DataLossError(path + ": length checksum mismatch");
    }
    if (data.size() - pos - 12 < length + 4) return absl::DataLossError(path + ": truncated");
    const char* body = data.data() + pos + 12;
    std::memcpy(&data_crc, body + length, 4);
    if (crc32c::Mask(crc32c::Value(body, length)) != data_crc) {
      return absl::DataLossError(path + ": data checksum mismatch");
    }
    Event event;
    if (!event.ParseFromArray(body, static_cast<int>(length))) {
      return absl::DataLossError(path + ": record is not an Event");
    }
    ReadEvent e;
    e.step = event.step();
    e.file_version = event.file_version();
    for (const auto& v : event.summary().value()) {
      if (v.has_histo()) {
        const auto& p = v.histo();
        e.histograms.emplace_back(
            v.tag(),
            Histogram{p.min(), p.max(), p.num(), p.sum(), p.sum_squares(),
                      std::vector<double>(p.bucket_limit().begin(), p.bucket_limit().end()),
                      std::vector<double>(p.bucket().begin(), p.bucket().end())});
      } else {
        e.scalars.emplace_back(v.tag(), v.simple_value());
      }
    }
    out.push_back(std::move(e));
    pos += 12 + length + 4;
  }
  return out;
}

}  // namespace taas::summary
