#include "redis-cache/cache.h"

#include "core/transport/redis.h"

namespace iosonar::cache {

std::string JobSummaryKey(std::string_view job_id) {
  std::string key(kKeyPrefix);
  key += "job:";
  key += job_id;
  key += ":summary";
  return key;
}

namespace {
// An empty id would make every job share one key.
Status CheckJobId(const std::string& job_id) {
  if (job_id.empty()) return Status::Invalid("job summary cache: empty job id");
  return Status::Ok();
}
}  // namespace

Status CacheJobSummary(const std::string& redis_url, const std::string& job_id, const std::string& json,
                       int ttl_seconds) {
  if (Status st = CheckJobId(job_id); !st.ok()) return st;
  auto client = RedisClient::Connect(redis_url);
  if (!client.ok()) return client.status();
  return client.value()->Set(JobSummaryKey(job_id), json, ttl_seconds);
}

Result<std::optional<std::string>> CachedJobSummary(const std::string& redis_url, const std::string& job_id) {
  if (Status st = CheckJobId(job_id); !st.ok()) return st;
  auto client = RedisClient::Connect(redis_url);
  if (!client.ok()) return client.status();
  return client.value()->Get(JobSummaryKey(job_id));
}

std::string JobResultKey(std::string_view job_id, std::string_view kind) {
  return std::string(kKeyPrefix) + "job:" + std::string(job_id) + ":" + std::string(kind);
}

Status CacheJobResult(const std::string& redis_url, const std::string& job_id, std::string_view kind,
                      const std::string& json, int ttl_seconds) {
  if (Status st = CheckJobId(job_id); !st.ok()) return st;
  auto client = RedisClient::Connect(redis_url);
  if (!client.ok()) return client.status();
  return client.value()->Set(JobResultKey(job_id, kind), json, ttl_seconds);
}

Result<std::optional<std::string>> CachedJobResult(const std::string& redis_url, const std::string& job_id,
                                                   std::string_view kind) {
  if (Status st = CheckJobId(job_id); !st.ok()) return st;
  auto client = RedisClient::Connect(redis_url);
  if (!client.ok()) return client.status();
  return client.value()->Get(JobResultKey(job_id, kind));
}
// ---- LASSi and probe slowdown results ----
std::string LassiKey(std::string_view fs, std::string_view from_iso, std::string_view to_iso, int64_t window_s,
                     std::string_view baseline) {
  std::string key(kKeyPrefix);
  key += "lassi:";
  key += fs.empty() ? std::string_view("all") : fs;
  key += ':';
  key += from_iso;
  key += ':';
  key += to_iso;
  key += ':';
  key += std::to_string(window_s);
  if (!baseline.empty()) {
    key += ':';
    key += baseline;
  }
  return key;
}

std::string SlowdownKey(std::string_view fs, std::string_view from_iso, std::string_view to_iso,
                        std::string_view baseline) {
  std::string key(kKeyPrefix);
  key += "slowdown:";
  key += fs.empty() ? std::string_view("all") : fs;
  key += ':';
  key += from_iso;
  key += ':';
  key += to_iso;
  if (!baseline.empty()) {
    key += ':';
    key += baseline;
  }
  return key;
}

// (stored and read with CacheResult / CachedResult below)

std::string HeatmapKey(std::string_view day) {
  std::string key(kKeyPrefix);
  key += "heatmap:v2:";  // v2: OST IOPS and latency added
  key += day;
  return key;
}

std::string JobPhasesKey(std::string_view job_id) { return JobResultKey(job_id, "phases"); }
std::string JobTokioSummaryKey(std::string_view job_id) { return JobResultKey(job_id, "tokio_summary"); }

Status CacheResult(const std::string& redis_url, const std::string& key, const std::string& value, int ttl_seconds) {
  if (key.empty() || key.find("job::") != std::string::npos) return Status::Invalid("result cache: empty key or job id");
  auto client = RedisClient::Connect(redis_url);
  if (!client.ok()) return client.status();
  return client.value()->Set(key, value, ttl_seconds);
}

Result<std::optional<std::string>> CachedResult(const std::string& redis_url, const std::string& key) {
  if (key.empty() || key.find("job::") != std::string::npos) return Status::Invalid("result cache: empty key or job id");
  auto client = RedisClient::Connect(redis_url);
  if (!client.ok()) return client.status();
  return client.value()->Get(key);
}

// ---- results to MySQL, Redis and a stream (scoreboard, per job xlayer/compress2) ----
std::string ScoreboardKey(std::string_view cluster, std::string_view from_iso, std::string_view to_iso) {
  std::string key(kKeyPrefix);
  key += "scoreboard:";
  key += cluster.empty() ? std::string_view("all") : cluster;
  key += ':';
  key += from_iso;
  key += ':';
  key += to_iso;
  return key;
}
std::string JobXlayerKey(std::string_view job_id) { return JobResultKey(job_id, "xlayer"); }
std::string JobCompress2Key(std::string_view job_id, bool lossy) {
  return JobResultKey(job_id, lossy ? "compress2_lossy" : "compress2");
}

}  // namespace iosonar::cache
