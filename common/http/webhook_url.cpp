#include "common/http/webhook_url.h"

#include <string_view>

namespace benchfleet {

Result<WebhookTarget> split_webhook_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) {
    return Error::invalid("alert_webhook_url", "must be an http:// URL such as http://alerts.example:9000/hook");
  }
  const std::size_t slash = url.find_first_of("/?#", kScheme.size());
  const std::string host =
      url.substr(kScheme.size(), slash == std::string::npos ? std::string::npos : slash - kScheme.size());
  if (host.empty() || host.front() == ':' || host.find_first_of(" \t@") != std::string::npos) {
    return Error::invalid("alert_webhook_url", "needs a host, as in http://alerts.example:9000/hook");
  }
  if (url.find('#') != std::string::npos) {
    return Error::invalid("alert_webhook_url", "must not have a fragment (#...)");
  }
  if (url.find_first_of(" \t\r\n") != std::string::npos) {
    return Error::invalid("alert_webhook_url", "must not hold spaces or line breaks");
  }
  WebhookTarget out;
  out.base_url = std::string(kScheme) + host;
  if (slash == std::string::npos) {
    out.target.assign(1, '/');  // (assigning "/" trips GCC 12's -Wrestrict false positive)
  } else {
    out.target = url.substr(slash);
    if (out.target.front() == '?') out.target.insert(0, 1, '/');  // a query alone: the root path
  }
  return out;
}

}  // namespace benchfleet
