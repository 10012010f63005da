#include "core/config.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "build_config.h"
#include "fakes/fault_env.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::FaultEnv;

TEST(ConfigParseTest, Bool) {
  for (const char* yes : {"1", "true", "TRUE", "Yes", "on", " On "}) {
    EXPECT_EQ(parse_bool(yes), true) << yes;
  }
  for (const char* no : {"0", "false", "No", "OFF", ""}) EXPECT_EQ(parse_bool(no), false) << no;
  EXPECT_FALSE(parse_bool("maybe").has_value());
  EXPECT_FALSE(parse_bool("2").has_value());
}

TEST(ConfigParseTest, Size) {
  EXPECT_EQ(parse_size("1048576"), 1048576u);
  EXPECT_EQ(parse_size("64K"), 65536u);
  EXPECT_EQ(parse_size("64M"), 64u << 20);
  EXPECT_EQ(parse_size("2GiB"), 2ull << 30);
  EXPECT_EQ(parse_size("1.5k"), 1536u);
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_FALSE(parse_size("").has_value());
  EXPECT_FALSE(parse_size("-1").has_value());
  EXPECT_FALSE(parse_size("12Q").has_value());
  EXPECT_FALSE(parse_size("1e400").has_value());
}

TEST(ConfigParseTest, Duration) {
  EXPECT_EQ(parse_duration_ms("120"), 120000u);
  EXPECT_EQ(parse_duration_ms("90s"), 90000u);
  EXPECT_EQ(parse_duration_ms("500ms"), 500u);
  EXPECT_EQ(parse_duration_ms("2m"), 120000u);
  EXPECT_EQ(parse_duration_ms("1.5h"), 5400000u);
  EXPECT_EQ(parse_duration_ms("0"), 0u);
  EXPECT_FALSE(parse_duration_ms("").has_value());
  EXPECT_FALSE(parse_duration_ms("-1s").has_value());
  EXPECT_FALSE(parse_duration_ms("5 days").has_value());
  EXPECT_FALSE(parse_duration_ms("99999999999999999999").has_value());
  EXPECT_EQ(parse_duration_ms("30d"), 30u * 86'400'000);
  EXPECT_EQ(parse_duration_ms("2w"), 14u * 86'400'000);
  EXPECT_EQ(parse_duration_ms("100000d"), std::nullopt);  // past 31 years
}

TEST(ConfigParseTest, Count) {
  EXPECT_EQ(parse_count("0"), 0u);
  EXPECT_EQ(parse_count(" 100000 "), 100000u);
  EXPECT_EQ(parse_count("999999999999999"), 999999999999999u);
  for (const char* bad : {"", "-1", "1.5", "10k", "1e6", "9999999999999999", "12 34"}) {
    EXPECT_FALSE(parse_count(bad).has_value()) << bad;
  }
}

// The user tier's limits: on by default for size, named in a warning
// when a value does not parse (the default is used then).
TEST(ConfigLimitsTest, DefaultsValuesAndBadValues) {
  FaultEnv env;
  env.home = "/h";
  ResolvedConfig config = resolve_config({}, env);
  EXPECT_EQ(config.max_size, 4ull << 30);
  EXPECT_EQ(config.max_entries, 0u);
  EXPECT_EQ(config.max_age.count(), 0);

  env.vars = {
      {"KCACHE_MAX_SIZE", "500M"}, {"KCACHE_MAX_ENTRIES", "1000"}, {"KCACHE_MAX_AGE", "30d"}};
  config = resolve_config({}, env);
  EXPECT_EQ(config.max_size, 500ull << 20);
  EXPECT_EQ(config.max_entries, 1000u);
  EXPECT_EQ(config.max_age.count(), 30 * 86400);
  EXPECT_TRUE(config.warnings.empty());

  env.vars = {
      {"KCACHE_MAX_SIZE", "-1"}, {"KCACHE_MAX_ENTRIES", "lots"}, {"KCACHE_MAX_AGE", "forever"}};
  config = resolve_config({}, env);
  EXPECT_EQ(config.max_size, 4ull << 30);
  EXPECT_EQ(config.max_entries, 0u);
  ASSERT_EQ(config.warnings.size(), 3u);
  EXPECT_NE(config.warnings[0].find("KCACHE_MAX_SIZE='-1'"), std::string::npos)
      << config.warnings[0];
  EXPECT_NE(config.warnings[1].find("KCACHE_MAX_ENTRIES='lots'"), std::string::npos);
  EXPECT_NE(config.warnings[2].find("KCACHE_MAX_AGE='forever'"), std::string::npos);

  CacheOptions options;  // the program's options win
  options.max_size = 1 << 20;
  options.max_age = std::chrono::hours(1);
  config = resolve_config(options, env);
  EXPECT_EQ(config.max_size, 1u << 20);
  EXPECT_EQ(config.max_age.count(), 3600);
}

// Found by fuzz_config: a size above 2^63 (still within the accepted
// range) came out as 2^63, because llround's long long overflowed.
TEST(ConfigParseTest, SizesAboveTwoToThe63) {
  EXPECT_EQ(parse_size("10000000000000000000"), 10000000000000000000u);
  EXPECT_EQ(parse_size("11111111111111111K"), 11377777777777778688u);
  EXPECT_FALSE(parse_size("20000000000000000000").has_value());
}

TEST(ConfigParseTest, LogLevel) {
  EXPECT_EQ(parse_log_level("ERROR"), LogLevel::kError);
  EXPECT_EQ(parse_log_level("quiet"), LogLevel::kQuiet);
  EXPECT_EQ(parse_log_level("debug"), LogLevel::kDebug);
  EXPECT_FALSE(parse_log_level("verbose").has_value());
}

class ResolveConfigTest : public ::testing::Test {
 protected:
  FaultEnv env;
  void SetUp() override { env.home = "/home/alice"; }
  ResolvedConfig resolve(const CacheOptions& options = {}) { return resolve_config(options, env); }
};

TEST_F(ResolveConfigTest, DefaultsUseHomeAndVersionFolder) {
  ResolvedConfig config = resolve();
  ASSERT_TRUE(config.enabled);
  EXPECT_EQ(config.user_dir, "/home/alice/.cache/kcache/" + std::string(version_folder()));
  EXPECT_EQ(config.find("cache_dir")->origin, "build");
  EXPECT_EQ(config.find("log_level")->value, "warning");
  EXPECT_EQ(config.find("log_level")->origin, "default");
  EXPECT_EQ(config.memory_cache_size, 64u << 20);
  EXPECT_TRUE(config.warnings.empty());
}

TEST_F(ResolveConfigTest, XdgCacheHomeIsHonoured) {
  env.vars["XDG_CACHE_HOME"] = "/xdg";
  EXPECT_EQ(resolve().user_dir, "/xdg/kcache/" + std::string(version_folder()));
  env.vars["XDG_CACHE_HOME"] = "relative";  // the XDG spec says ignore it
  EXPECT_EQ(resolve().user_dir, "/home/alice/.cache/kcache/" + std::string(version_folder()));
}

TEST_F(ResolveConfigTest, CustomDirGetsTheVersionFolderToo) {
  env.vars["KCACHE_CUSTOM_CACHE_DIR"] = "/scratch/kc/";
  ResolvedConfig config = resolve();
  EXPECT_EQ(config.user_dir, "/scratch/kc/" + std::string(version_folder()));
  EXPECT_EQ(config.find("cache_dir")->origin, "env KCACHE_CUSTOM_CACHE_DIR");
  env.vars["KCACHE_CUSTOM_CACHE_DIR"] = "~/kc";
  EXPECT_EQ(resolve().user_dir, "/home/alice/kc/" + std::string(version_folder()));
}

TEST_F(ResolveConfigTest, OptionBeatsEnvironment) {
  env.vars["KCACHE_CUSTOM_CACHE_DIR"] = "/from-env";
  env.vars["KCACHE_LOG_LEVEL"] = "debug";
  CacheOptions options;
  options.cache_dir = "/from-option";
  ResolvedConfig config = resolve(options);
  EXPECT_EQ(config.user_dir, "/from-option/" + std::string(version_folder()));
  EXPECT_EQ(config.find("cache_dir")->origin, "option");
  EXPECT_EQ(config.log_level, LogLevel::kDebug);
  options.read_environment = false;
  EXPECT_EQ(resolve(options).log_level, LogLevel::kWarning);
}

TEST_F(ResolveConfigTest, DisableSwitch) {
  for (const char* value : {"1", "true", "YES", "On"}) {
    env.vars["KCACHE_DISABLE_CACHE"] = value;
    ResolvedConfig config = resolve();
    EXPECT_FALSE(config.enabled) << value;
    EXPECT_EQ(config.disabled_reason, std::string("KCACHE_DISABLE_CACHE=") + value);
    EXPECT_TRUE(config.user_dir.empty());
  }
  env.vars["KCACHE_DISABLE_CACHE"] = "off";
  EXPECT_TRUE(resolve().enabled);
  CacheOptions options;
  options.disable_cache = true;
  EXPECT_FALSE(resolve(options).enabled);
}

TEST_F(ResolveConfigTest, SyncAndTrustedKeys) {
  EXPECT_TRUE(resolve().sync);
  EXPECT_TRUE(resolve().trusted_keys.empty());
  env.vars["KCACHE_SYNC"] = "off";
  env.vars["KCACHE_TRUSTED_KEYS"] = " /etc/kcache/a.pub::~/keys : /srv/keys/ ";
  ResolvedConfig config = resolve();
  EXPECT_FALSE(config.sync);
  EXPECT_EQ(config.trusted_keys,
            (std::vector<std::string>{"/etc/kcache/a.pub", "/home/alice/keys", "/srv/keys/"}));
  CacheOptions options;
  options.sync = true;
  options.trusted_keys = "";
  EXPECT_TRUE(resolve(options).sync);
  EXPECT_TRUE(resolve(options).trusted_keys.empty());
  env.vars["KCACHE_SYNC"] = "sometimes";
  EXPECT_TRUE(resolve().sync);  // malformed: the default, with a warning
  // Set but naming no key ("$KEYS:" with KEYS unset): one empty path, so
  // the keys count as asked for and every package is refused.
  // Blank too: a security setting that is set fails closed (an audit's
  // ' ' switched checking off); only an empty value is off.
  for (const char* none : {":", " :: ", ": :", "  ", "\n"}) {
    env.vars["KCACHE_TRUSTED_KEYS"] = none;
    EXPECT_EQ(resolve().trusted_keys, std::vector<std::string>{""}) << none;
  }
  env.vars["KCACHE_TRUSTED_KEYS"] = "";
  EXPECT_TRUE(resolve().trusted_keys.empty()) << "empty is off";
}

// The settings read by the backends and the drop-in layers are rows too,
// so `kcache info` shows them with their origin; make_compiler hands a
// backend the value setting_value resolves, the same as the row's.
TEST_F(ResolveConfigTest, BackendAndLayerSettingsAreRows) {
  const ResolvedConfig defaults = resolve();
  for (const char* name : {"nvrtc_library", "hip_library", "hip_worker", "layer_disable"}) {
    const Setting* setting = defaults.find(name);
    ASSERT_NE(setting, nullptr) << name;
    EXPECT_EQ(setting->value, "") << name;
    EXPECT_EQ(setting->origin, "default") << name;
    EXPECT_EQ(setting_value(name, env), "") << name;
  }
  env.vars["KCACHE_NVRTC_LIBRARY"] = "/opt/cuda-12/lib64/libnvrtc.so.12";
  env.vars["KCACHE_HIP_LIBRARY"] = "libamdhip64.so.5";
  env.vars["KCACHE_HIP_WORKER"] = "/opt/kcache/kcache-hip-worker";
  env.vars["KCACHE_LAYER_DISABLE"] = "1";
  const ResolvedConfig config = resolve();
  EXPECT_EQ(config.find("nvrtc_library")->value, "/opt/cuda-12/lib64/libnvrtc.so.12");
  EXPECT_EQ(config.find("nvrtc_library")->origin, "env KCACHE_NVRTC_LIBRARY");
  EXPECT_EQ(config.find("hip_library")->origin, "env KCACHE_HIP_LIBRARY");
  EXPECT_EQ(config.find("hip_worker")->origin, "env KCACHE_HIP_WORKER");
  EXPECT_EQ(config.find("layer_disable")->value, "1");
  EXPECT_TRUE(config.warnings.empty());
  for (const char* name : {"nvrtc_library", "hip_library", "hip_worker", "layer_disable"}) {
    EXPECT_EQ(setting_value(name, env), config.find(name)->value) << name;
  }
  EXPECT_EQ(setting_value("no_such_setting", env), "");
}

TEST_F(ResolveConfigTest, MalformedValuesFallBackWithAWarning) {
  env.vars["KCACHE_LOG_LEVEL"] = "verbose";
  env.vars["KCACHE_MEMORY_CACHE_SIZE"] = "lots";
  env.vars["KCACHE_DISABLE_CACHE"] = "maybe";
  ResolvedConfig config = resolve();
  EXPECT_EQ(config.log_level, LogLevel::kWarning);
  EXPECT_EQ(config.memory_cache_size, 64u << 20);
  EXPECT_TRUE(config.enabled);
  ASSERT_EQ(config.warnings.size(), 3u);
  EXPECT_NE(config.warnings[0].find("KCACHE_DISABLE_CACHE='maybe'"), std::string::npos)
      << config.warnings[0];
}

// Found by attacking the tool: KCACHE_CUSTOM_CACHE_DIR= (an unset variable
// in a script) was silently the default folder.
TEST_F(ResolveConfigTest, EmptyCustomCacheDirIsReported) {
  for (const char* blank : {"", "  "}) {
    env.vars["KCACHE_CUSTOM_CACHE_DIR"] = blank;
    ResolvedConfig config = resolve();
    EXPECT_EQ(config.user_dir, "/home/alice/.cache/kcache/" + std::string(version_folder()));
    EXPECT_EQ(config.find("cache_dir")->origin, "build");
    ASSERT_EQ(config.warnings.size(), 1u) << "'" << blank << "'";
    EXPECT_EQ(config.warnings[0], "Ignoring KCACHE_CUSTOM_CACHE_DIR='" + std::string(blank) +
                                      "': expected a path; using '~/.cache/kcache'");
  }
  // A blank value of another setting still means "unset", silently.
  env.vars.erase("KCACHE_CUSTOM_CACHE_DIR");
  env.vars["KCACHE_LOG_LEVEL"] = "";
  EXPECT_TRUE(resolve().warnings.empty());
}

// No home: the default folder falls back to a private one under TMPDIR
// (tests/core/config_fallback_test.cpp has the refusals); a folder the user
// chose is never replaced.
TEST_F(ResolveConfigTest, NoHomeFallsBackToAPrivateFolder) {
  testing::TempFolder tmp;
  env.vars["TMPDIR"] = tmp.path();
  env.home.reset();
  ResolvedConfig config = resolve();
  EXPECT_TRUE(config.enabled);
  const std::string root = tmp / ("kcache-" + std::to_string(::getuid()));
  EXPECT_EQ(config.user_dir, root + "/" + std::string(version_folder()));
  EXPECT_EQ(config.find("cache_dir")->value, root);
  EXPECT_EQ(config.find("cache_dir")->origin, "fallback (HOME is not set)");
  ASSERT_EQ(config.warnings.size(), 1u);
  EXPECT_NE(config.warnings[0].find("HOME is not set"), std::string::npos);
  env.vars["KCACHE_CUSTOM_CACHE_DIR"] = "/explicit";
  EXPECT_EQ(resolve().user_dir, "/explicit/" + std::string(version_folder()));
  env.vars["KCACHE_CUSTOM_CACHE_DIR"] = "~/kc";
  config = resolve();
  EXPECT_TRUE(config.user_dir.empty());
  ASSERT_EQ(config.warnings.size(), 1u);
  EXPECT_NE(config.warnings[0].find("'~/kc' cannot be used"), std::string::npos);
}

// Found by fuzz_config: an empty cache_dir option named "/<version>", a
// folder under the root.
TEST_F(ResolveConfigTest, EmptyCacheDirOptionMeansNoUserDir) {
  CacheOptions options;
  options.cache_dir = "";
  ResolvedConfig config = resolve(options);
  EXPECT_TRUE(config.enabled);
  EXPECT_EQ(config.user_dir, "");
  ASSERT_EQ(config.warnings.size(), 1u);
  EXPECT_NE(config.warnings[0].find("cache_dir is empty"), std::string::npos);
}

// Every environment variable of the settings table is documented in the
// README's configuration table.
TEST(ConfigDocsTest, ReadmeListsEverySetting) {
  std::ifstream readme(std::string(KCACHE_TEST_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(readme.good()) << "README.md not found";
  std::stringstream text;
  text << readme.rdbuf();
  FaultEnv env;
  env.home = "/h";
  for (const auto& setting : resolve_config({}, env).settings) {
    EXPECT_NE(text.str().find("`" + setting.env_var + "`"), std::string::npos)
        << setting.env_var << " is missing from README.md";
  }
}

}  // namespace
}  // namespace kcache
