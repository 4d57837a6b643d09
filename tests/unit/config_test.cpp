#include "coordinator/config/config.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace benchfleet {
namespace {

Result<config::ConfigParse> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "benchfleet-coordinator");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return config::parse_coordinator_config(static_cast<int>(argv.size()), argv.data());
}

TEST(CoordinatorConfig, YamlSetsOptionsAndNamesBadKeys) {
  config::CoordinatorConfig c;
  ASSERT_TRUE(
      config::apply_yaml_config("lease_ttl_s: 90\npublic_reads: false\nlisten: 0.0.0.0:9000\n", "c.yaml", c).ok());
  EXPECT_EQ(c.lease_ttl_s, 90);
  EXPECT_FALSE(c.public_reads);
  EXPECT_EQ(c.listen, "0.0.0.0:9000");

  auto unknown = config::apply_yaml_config("lease_ttl: 90\n", "c.yaml", c);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().field, "lease_ttl");
  EXPECT_NE(unknown.error().message.find("c.yaml"), std::string::npos);

  auto wrong_type = config::apply_yaml_config("max_attempts: many\n", "c.yaml", c);
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_EQ(wrong_type.error().field, "max_attempts");

  EXPECT_FALSE(config::apply_yaml_config("[1, 2]", "c.yaml", c).ok());
  EXPECT_FALSE(config::apply_yaml_config("a: [", "c.yaml", c).ok());
}

TEST(CoordinatorConfig, ValidationNamesTheOption) {
  config::CoordinatorConfig c;
  EXPECT_TRUE(validate(c).ok());
  c.heartbeat_interval_s = c.lease_ttl_s;
  EXPECT_EQ(validate(c).error().field, "heartbeat_interval_s");
  c = config::CoordinatorConfig{};
  c.max_attempts = 0;
  EXPECT_EQ(validate(c).error().field, "max_attempts");
}

TEST(CoordinatorConfig, FlagsBeatEnvironmentWhichBeatsTheFile) {
  const testing::TempDir tmp("bf-config");
  const auto path = tmp.path() / "coordinator.yaml";
  std::ofstream(path) << "lease_ttl_s: 70\nmax_attempts: 5\nlong_poll_timeout_s: 11\n";
  ::setenv("BENCHFLEET_MAX_ATTEMPTS", "7", 1);
  ::setenv("BENCHFLEET_LONG_POLL_TIMEOUT_S", "12", 1);
  auto r = parse({"--config", path.string(), "--long-poll-timeout-s", "13"});
  ::unsetenv("BENCHFLEET_MAX_ATTEMPTS");
  ::unsetenv("BENCHFLEET_LONG_POLL_TIMEOUT_S");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_FALSE(r->exit_now);
  EXPECT_EQ(r->config.lease_ttl_s, 70) << "file only";
  EXPECT_EQ(r->config.max_attempts, 7) << "environment over file";
  EXPECT_EQ(r->config.long_poll_timeout_s, 13) << "flag over environment";
}

TEST(CoordinatorConfig, UsageErrorsExitNonZeroAndHelpExitsZero) {
  auto bad = parse({"--lease-ttl-s", "soon"});
  ASSERT_TRUE(bad.ok());
  EXPECT_TRUE(bad->exit_now);
  EXPECT_NE(bad->exit_code, 0);
  auto help = parse({"--help"});
  ASSERT_TRUE(help.ok());
  EXPECT_TRUE(help->exit_now);
  EXPECT_EQ(help->exit_code, 0);
  auto invalid = parse({"--max-attempts", "0"});
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error().field, "max_attempts");
  auto missing = parse({"--config", "/nonexistent/benchfleet.yaml"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().field, "config");
}

TEST(CoordinatorConfig, ConnectionAndInFlightBodyBoundsAreOptions) {
  auto defaults = parse({});
  ASSERT_TRUE(defaults.ok()) << defaults.error().describe();
  EXPECT_EQ(defaults->config.max_connections, 2048);
  EXPECT_EQ(defaults->config.max_inflight_body_bytes, std::int64_t{64} << 20);
  EXPECT_EQ(defaults->config.reserved_connections, 256);
  EXPECT_EQ(defaults->config.max_connections_per_peer, 64);
  EXPECT_EQ(defaults->config.idle_timeout_s, 60);
  EXPECT_EQ(defaults->config.first_request_timeout_s, 5);
  EXPECT_EQ(defaults->config.header_timeout_s, 10);
  auto set = parse({"--max-connections", "3", "--reserved-connections", "1", "--max-connections-per-peer", "0",
                    "--idle-timeout-s", "2", "--first-request-timeout-s", "1", "--header-timeout-s", "3",
                    "--max-inflight-body-bytes", "4096"});
  ASSERT_TRUE(set.ok()) << set.error().describe();
  EXPECT_EQ(set->config.max_connections, 3);
  EXPECT_EQ(set->config.reserved_connections, 1);
  EXPECT_EQ(set->config.max_connections_per_peer, 0);
  EXPECT_EQ(set->config.idle_timeout_s, 2);
  EXPECT_EQ(set->config.first_request_timeout_s, 1);
  EXPECT_EQ(set->config.header_timeout_s, 3);
  EXPECT_EQ(set->config.max_inflight_body_bytes, 4096);
  auto no_connections = parse({"--max-connections", "0"});
  ASSERT_FALSE(no_connections.ok());
  EXPECT_EQ(no_connections.error().field, "max_connections");
  // The reserve must leave anonymous clients some room, and says so against the bound it meets.
  auto all_reserved = parse({"--max-connections", "3"});
  ASSERT_FALSE(all_reserved.ok());
  EXPECT_EQ(all_reserved.error().field, "reserved_connections");
  EXPECT_NE(all_reserved.error().message.find("below max_connections (3)"), std::string::npos)
      << all_reserved.error().message;
  const std::pair<const char*, const char*> timeouts[] = {{"--idle-timeout-s", "idle_timeout_s"},
                                                          {"--first-request-timeout-s", "first_request_timeout_s"},
                                                          {"--header-timeout-s", "header_timeout_s"}};
  for (const auto& [flag, field] : timeouts) {
    auto zero = parse({flag, "0"});
    ASSERT_FALSE(zero.ok()) << flag;
    EXPECT_EQ(zero.error().field, field);
  }
  auto tiny = parse({"--max-inflight-body-bytes", "10"});
  ASSERT_FALSE(tiny.ok());
  EXPECT_EQ(tiny.error().field, "max_inflight_body_bytes");
}

TEST(CoordinatorConfig, AgentsFirstLanesBudgetsAndListenerAreOptions) {
  auto defaults = parse({});
  ASSERT_TRUE(defaults.ok()) << defaults.error().describe();
  EXPECT_EQ(defaults->config.agent_threads, 32);
  EXPECT_EQ(defaults->config.read_threads, 0);
  EXPECT_EQ(defaults->config.read_nice, 0);
  EXPECT_EQ(defaults->config.max_inflight_body_bytes_per_client, std::int64_t{16} << 20);
  EXPECT_EQ(defaults->config.max_inflight_response_bytes, std::int64_t{256} << 20);
  EXPECT_EQ(defaults->config.max_inflight_response_bytes_per_client, std::int64_t{64} << 20);
  EXPECT_EQ(defaults->config.agent_listen, "");
  auto set = parse({"--agent-threads", "4", "--read-threads", "2", "--read-nice", "19", "--agent-listen", "127.0.0.1:0",
                    "--max-inflight-response-bytes", "0"});
  ASSERT_TRUE(set.ok()) << set.error().describe();
  EXPECT_EQ(set->config.agent_threads, 4);
  EXPECT_EQ(set->config.read_threads, 2);
  EXPECT_EQ(set->config.read_nice, 19);
  EXPECT_EQ(set->config.agent_listen, "127.0.0.1:0");
  EXPECT_EQ(set->config.max_inflight_response_bytes, 0);
  const std::pair<std::vector<std::string>, const char*> bad[] = {{{"--agent-threads", "0"}, "agent_threads"},
                                                                  {{"--read-nice", "20"}, "read_nice"},
                                                                  {{"--read-threads", "65"}, "read_threads"}};
  for (const auto& [args, field] : bad) {
    auto refused = parse(args);
    ASSERT_FALSE(refused.ok()) << args[0];
    EXPECT_EQ(refused.error().field, field);
  }
}

TEST(CoordinatorConfig, WebRootDefaultsToTheAssembledDashboardAndEmptyDisablesIt) {
  // A build-tree binary (this test) serves the build tree's web/.
  EXPECT_EQ(config::CoordinatorConfig{}.web_root, config::default_web_root());
  EXPECT_TRUE(config::default_web_root().ends_with("/web")) << config::default_web_root();
  auto defaults = parse({});
  ASSERT_TRUE(defaults.ok()) << defaults.error().describe();
  EXPECT_EQ(defaults->config.web_root, config::default_web_root());

  auto flag = parse({"--web-root", "/srv/dashboard"});
  ASSERT_TRUE(flag.ok()) << flag.error().describe();
  EXPECT_EQ(flag->config.web_root, "/srv/dashboard");
  auto disabled = parse({"--web-root", ""});
  ASSERT_TRUE(disabled.ok()) << disabled.error().describe();
  EXPECT_EQ(disabled->config.web_root, "");

  ::setenv("BENCHFLEET_WEB_ROOT", "/srv/from-env", 1);
  auto env = parse({});
  ::unsetenv("BENCHFLEET_WEB_ROOT");
  ASSERT_TRUE(env.ok()) << env.error().describe();
  EXPECT_EQ(env->config.web_root, "/srv/from-env");

  config::CoordinatorConfig c;
  ASSERT_TRUE(config::apply_yaml_config("web_root: \"\"\n", "c.yaml", c).ok());
  EXPECT_EQ(c.web_root, "");
}

}  // namespace
TEST(CoordinatorConfig, HistoryOptionsHaveFlagsYamlAndEnvironmentAndAreValidated) {
  auto defaults = parse({});
  ASSERT_TRUE(defaults.ok()) << defaults.error().describe();
  EXPECT_EQ(defaults->config.schedule_check_ms, 5000);
  EXPECT_EQ(defaults->config.detect_confirm_runs, 2);
  EXPECT_DOUBLE_EQ(defaults->config.detect_min_effect, 0.05);
  EXPECT_EQ(defaults->config.alert_webhook_url, "");

  ::setenv("BENCHFLEET_DETECT_ALPHA", "0.01", 1);
  auto set = parse({"--schedule-check-ms",        "50",
                    "--detect-interval-ms",       "20",
                    "--detect-min-effect",        "0.1",
                    "--detect-confirm-runs",      "3",
                    "--detect-baseline-runs",     "7",
                    "--detect-min-baseline-runs", "4",
                    "--alert-webhook-url",        "http://127.0.0.1:9/hook?x=1",
                    "--alert-timeout-ms",         "300",
                    "--alert-max-attempts",       "4",
                    "--alert-backoff-initial-ms", "10",
                    "--alert-backoff-max-ms",     "80"});
  ::unsetenv("BENCHFLEET_DETECT_ALPHA");
  ASSERT_TRUE(set.ok()) << set.error().describe();
  const config::CoordinatorConfig& c = set->config;
  EXPECT_EQ(c.schedule_check_ms, 50);
  EXPECT_EQ(c.detect_interval_ms, 20);
  EXPECT_DOUBLE_EQ(c.detect_min_effect, 0.1);
  EXPECT_DOUBLE_EQ(c.detect_alpha, 0.01);
  EXPECT_EQ(c.detect_confirm_runs, 3);
  EXPECT_EQ(c.detect_baseline_runs, 7);
  EXPECT_EQ(c.detect_min_baseline_runs, 4);
  EXPECT_EQ(c.alert_webhook_url, "http://127.0.0.1:9/hook?x=1");
  EXPECT_EQ(c.alert_timeout_ms, 300);
  EXPECT_EQ(c.alert_max_attempts, 4);
  EXPECT_EQ(c.alert_backoff_initial_ms, 10);
  EXPECT_EQ(c.alert_backoff_max_ms, 80);

  config::CoordinatorConfig y;
  ASSERT_TRUE(
      config::apply_yaml_config("detect_alpha: 0.005\nalert_webhook_url: http://hooks:80/\n", "c.yaml", y).ok());
  EXPECT_DOUBLE_EQ(y.detect_alpha, 0.005);
  EXPECT_EQ(y.alert_webhook_url, "http://hooks:80/");

  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--schedule-check-ms", "0"}, "schedule_check_ms"},
      {{"--detect-interval-ms", "5"}, "detect_interval_ms"},
      {{"--detect-min-effect", "-0.1"}, "detect_min_effect"},
      {{"--detect-alpha", "0"}, "detect_alpha"},
      {{"--detect-alpha", "1"}, "detect_alpha"},
      {{"--detect-confirm-runs", "0"}, "detect_confirm_runs"},
      {{"--detect-baseline-runs", "0"}, "detect_baseline_runs"},
      {{"--detect-baseline-runs", "3", "--detect-min-baseline-runs", "4"}, "detect_min_baseline_runs"},
      {{"--alert-webhook-url", "https://hooks.example/x"}, "alert_webhook_url"},
      {{"--alert-webhook-url", "hooks.example/x"}, "alert_webhook_url"},
      {{"--alert-webhook-url", "http:///x"}, "alert_webhook_url"},
      {{"--alert-timeout-ms", "0"}, "alert_timeout_ms"},
      {{"--alert-max-attempts", "0"}, "alert_max_attempts"},
      {{"--alert-backoff-initial-ms", "0"}, "alert_backoff_initial_ms"},
      {{"--alert-backoff-initial-ms", "100", "--alert-backoff-max-ms", "50"}, "alert_backoff_max_ms"},
  };
  for (const auto& [args, field] : bad) {
    auto r = parse(args);
    ASSERT_FALSE(r.ok()) << args[0] << " " << args[1];
    EXPECT_EQ(r.error().field, field) << args[0] << " " << args[1];
  }
}

}  // namespace benchfleet
