#include "core/transport/sink.h"

#include <cstdio>
#include <cstdlib>

#include "core/transport/es_client.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/transport/line_sender.h"
#include "core/transport/lumberjack_sender.h"
#include "core/base/url.h"
#include "core/records/record.h"

namespace iosonar {

RecordSink::~RecordSink() = default;

bool IsElasticsearchOutput(std::string_view o) {
  return o.starts_with("http://") || o.starts_with("https://") || o.starts_with("es+http://") ||
         o.starts_with("es+https://");
}

namespace {

// tcp://, file and stdout: the LineSender (spool + resend for tcp).
class LineSink final : public RecordSink {
 public:
  Status Init(const std::string& output, const SinkOptions& o) {
    output_ = output;
    spool_ = o.spool_dir;
    LineSender::Options lo;
    lo.output = output_.c_str();
    lo.spool_dir = spool_.empty() ? nullptr : spool_.c_str();
    lo.spool_max_bytes = o.spool_max_bytes;
    char err[512] = {0};
    if (!sender_.Init(lo, err, sizeof err)) return Status::Invalid("output '" + output + "': " + err);
    return Status::Ok();
  }
  Status Send(std::string_view lines, uint64_t nlines) override {
    if (lines.empty()) return Status::Ok();
    if (lines.back() != '\n') return Status::Invalid("Send: lines must end in a newline");
    if (!sender_.Send(lines.data(), lines.size(), nlines))
      return Status::Unavailable("output '" + output_ + "': " + std::to_string(nlines) + " lines neither sent nor spooled");
    return Status::Ok();
  }
  Status Flush() override { return Status::Ok(); }  // LineSender writes through
  SinkCounters counters() const override {
    auto c = const_cast<LineSender&>(sender_).counters();
    SinkCounters s;
    s.lines_sent = c.lines_sent + c.lines_resent;
    s.spooled = c.lines_spooled;
    s.dropped = c.lines_dropped;
    return s;
  }
  std::string_view kind() const override {
    switch (sender_.kind()) {
      case LineSender::Kind::kTcp: return "tcp";
      case LineSender::Kind::kFile: return "file";
      case LineSender::Kind::kStdout: return "stdout";
      default: return "none";
    }
  }

 private:
  std::string output_, spool_;
  LineSender sender_;
};

// Elasticsearch: lines validated against the schema, batched into _bulk.
class EsSink final : public RecordSink {
 public:
  EsSink(std::unique_ptr<EsClient> c, const EsOptions& o) : es_(std::move(c)), opts_(o) {}
  ~EsSink() override { (void)Flush(); }

  Status Send(std::string_view lines, uint64_t /*nlines*/) override {
    size_t pos = 0;
    while (pos < lines.size()) {
      size_t nl = lines.find('\n', pos);
      if (nl == std::string_view::npos) nl = lines.size();
      std::string_view line = lines.substr(pos, nl - pos);
      pos = nl + 1;
      if (line.empty()) continue;
      buf_.assign(line);
      buf_.push_back('\0');
      if (auto st = ParseRecordInsitu(buf_.data(), line.size(), &rec_); !st.ok()) {
        SetAside(line, 0, st.message());
        continue;
      }
      BulkDoc d;
      d.index = DataStreamName(*rec_.dataset, opts_.name_space);
      d.id = DocId(rec_);
      d.source.assign(line);
      AddGroupKeys(&d.source, rec_);
      pending_bytes_ += d.source.size() + d.index.size() + d.id.size() + 40;
      pending_.push_back(std::move(d));
      if (pending_bytes_ >= opts_.max_batch_bytes || pending_.size() >= opts_.max_batch_docs) {
        if (auto st = Flush(); !st.ok()) return st;
      }
    }
    return Status::Ok();
  }

  Status Flush() override {
    if (pending_.empty()) return Status::Ok();
    BulkStats bs;
    std::vector<BulkRejected> rej;
    const size_t n = pending_.size();
    Status st = es_->Bulk(std::move(pending_), &bs, &rej);
    pending_.clear();
    pending_bytes_ = 0;
    c_.lines_sent += bs.created;
    c_.already_stored += bs.already_stored;
    c_.retried += bs.item_retries + bs.request_retries;
    for (const auto& r : rej) SetAside(r.doc.source, r.status, r.reason);
    if (!st.ok()) {
      uint64_t done = bs.created + bs.already_stored + bs.rejected;
      c_.dropped += n > done ? n - done : 0;
      return st;
    }
    return Status::Ok();
  }

  SinkCounters counters() const override { return c_; }
  std::string_view kind() const override { return "elasticsearch"; }

 private:
  void SetAside(std::string_view line, long status, const std::string& reason) {
    ++c_.rejected;
    if (opts_.dead_letter_path.empty()) {
      std::fprintf(stderr, "iosonar: record set aside (HTTP %ld): %s\n", status, reason.c_str());
      return;
    }
    std::string out;
    JsonWriter w(&out);
    KvObject(w, "reason", reason, "status", static_cast<long>(status), "source", es_->http().base_url(), "line", line);
    out.push_back('\n');
    if (FILE* f = std::fopen(opts_.dead_letter_path.c_str(), "a")) {
      std::fwrite(out.data(), 1, out.size(), f);
      std::fclose(f);
    }
  }

  std::unique_ptr<EsClient> es_;
  EsOptions opts_;
  std::vector<BulkDoc> pending_;
  size_t pending_bytes_ = 0;
  std::string buf_;
  ParsedRecord rec_;
  SinkCounters c_;
};

}  // namespace

// lumberjack:// (beats://): acknowledged delivery (lumberjack_sender.h).
class LumberjackSink final : public RecordSink {
 public:
  Status Init(const std::string& output, const SinkOptions& o) {
    auto u = ParseUrl(output);
    if (!u.ok()) return u.status();
    LumberjackSender::Options lo;
    lo.host = u->host;
    lo.port = std::to_string(u->port);
    lo.spool_dir = o.spool_dir;
    lo.spool_fallback = o.spool_fallback;
    lo.spool_max_bytes = o.spool_max_bytes;
    lo.tls = u->scheme == "lumberjacks" || u->scheme == "beatss";
    for (const auto& [k, v] : u->query) {
      if (k == "auth" && v == "munge") lo.munge = true;
      // Also by Logstash's names (Filebeat's are the same with dots: ssl.certificate_authorities, ...).
      else if (k == "tls" && (v == "1" || v == "0")) lo.tls = lo.tls || v == "1";
      else if (k == "ca" || k == "ssl_certificate_authorities") lo.tls_ca = v;
      else if (k == "cert" || k == "ssl_certificate") lo.tls_cert = v;
      else if (k == "key" || k == "ssl_key") lo.tls_key = v;
      else if (k == "munge_socket") lo.munge_socket = v;
      else if (k == "window") lo.window = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
      else if (k == "compression_level") {  // Filebeat's and Logstash's name: zlib level, 0 = off
        if (v.size() != 1 || v[0] < '0' || v[0] > '9')
          return Status::Invalid("output '" + RedactUrl(output) + "': compression_level must be 0 (off) to 9, not '" +
                                 v + "'");
        lo.compression_level = v[0] - '0';
      }
      else return Status::Invalid("output '" + RedactUrl(output) + "': unknown parameter '" + k +
                                  "' (known: auth=munge, munge_socket=PATH, window=N, compression_level=0..9 (default 3), tls=1, ca=FILE, cert=FILE, key=FILE; ca, cert, key also as Logstash spells them: "
                                  "ssl_certificate_authorities, ssl_certificate, ssl_key)");
    }
    if (auto st = sender_.Init(lo); !st.ok()) return Status::Invalid("output '" + RedactUrl(output) + "': " + st.message());
    return Status::Ok();
  }
  Status Send(std::string_view lines, uint64_t /*nlines*/) override {
    if (lines.empty()) return Status::Ok();
    if (lines.back() != '\n') return Status::Invalid("Send: lines must end in a newline");
    return sender_.Send(lines);
  }
  Status Flush() override { return sender_.Flush(); }
  SinkCounters counters() const override {
    const auto& c = sender_.counters();
    SinkCounters s;
    s.lines_sent = c.acked;
    s.spooled = c.spooled;
    s.dropped = c.dropped;
    return s;
  }
  std::string_view kind() const override { return "lumberjack"; }

 private:
  LumberjackSender sender_;
};

Result<std::unique_ptr<RecordSink>> OpenSink(const std::string& output, const SinkOptions& opts) {
  if (output.starts_with("lumberjack://") || output.starts_with("beats://") || output.starts_with("lumberjacks://") ||
      output.starts_with("beatss://")) {
    auto s = std::make_unique<LumberjackSink>();
    if (auto st = s->Init(output, opts); !st.ok()) return st;
    return std::unique_ptr<RecordSink>(std::move(s));
  }
  if (IsElasticsearchOutput(output)) {
    auto c = EsClient::Open(output, opts.es);
    if (!c.ok()) return c.status();
    return std::unique_ptr<RecordSink>(std::make_unique<EsSink>(std::move(*c), opts.es));
  }
  auto s = std::make_unique<LineSink>();
  if (auto st = s->Init(output, opts); !st.ok()) return st;
  return std::unique_ptr<RecordSink>(std::move(s));
}

}  // namespace iosonar
