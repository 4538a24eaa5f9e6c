// Sending one e-mail over SMTP with libcurl (loaded at run time like the
// HTTP client: no binary links libcurl). For the administrators' alerts.
//
// url: smtp://HOST[:PORT] (plain, or STARTTLS required with require_tls) or
// smtps://HOST[:PORT] (TLS from the start).
// The message is built here: Date, From, To, Subject, Message-ID headers and
// a text/plain UTF-8 body; lines end in CRLF and a leading '.' is left to
// libcurl's dot-stuffing. Errors: Unavailable for transport failures (the
// server refused, unreachable, a 4xx/5xx reply), naming the server.
// Thread-safe (one easy handle per call).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace iosonar {

struct MailMessage {
  std::string from;                 // bare address: iosonar@host
  std::vector<std::string> to;      // bare addresses
  std::string subject;
  std::string body;                 // '\n' line ends (converted to CRLF)
};

struct SmtpOptions {
  std::string url;                  // smtp://host:port or smtps://host:port
  std::string user, password;       // AUTH when user is set (password never printed)
  bool require_tls = false;         // STARTTLS required (CURLUSESSL_ALL)
  long timeout_s = 30;
};

Status SendMail(const SmtpOptions& smtp, const MailMessage& msg);

// The message as it goes on the wire (headers + CRLF body), for tests and logs.
std::string FormatMail(const MailMessage& msg, int64_t date_ns, const std::string& message_id);

}  // namespace iosonar
