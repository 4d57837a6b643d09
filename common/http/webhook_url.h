// An alert webhook's URL, as the coordinator's config check and its history worker (which posts
// the alerts) both read it.
//   Result<WebhookTarget> t = split_webhook_url("http://hooks.example:9000/bf?x=1");
//   // t->base_url "http://hooks.example:9000", t->target "/bf?x=1"
#pragma once

#include <string>

#include "common/result.h"

namespace benchfleet {

// "http://host:port/path?query" split into the client's base URL ("http://host:port") and the
// request target ("/path?query", "/" when none). Error{kInvalidArgument} naming
// "alert_webhook_url" unless it is an http:// URL with a host.
struct WebhookTarget {
  std::string base_url;
  std::string target;
};
Result<WebhookTarget> split_webhook_url(const std::string& url);

}  // namespace benchfleet
