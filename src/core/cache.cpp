// The cache facade and its tier policy.
//
// Lookup order, for a request whose key is K and target T: the tiers of
// the list (core/tier_list.h), in the order they were added:
//   1. memory  this process's LRU of recent entries (the copy tier);
//   2. system  read-only packages: <T.arch>_<T.units>.kdb, then <T.arch>.kdb;
//   3. user    the read-write cache of this user, database <T.arch>_<T.units>
//              (the home tier);
//   4. compile once per key in this process (single flight), under the
//      key's lock across processes (core/lock_wait.h); the binary is
//      kept in the copy tier (waiting threads get it from there), then
//      written to the home tier.
// A hit below the copy tier is kept there too (the bytes are shared), unless
// the caller keeps what it makes of them (GetOptions::keep_in_memory);
// nothing is ever written to a read-only tier. Every entry read from disk
// has passed its checksum; its key material must also equal the request's
// byte for byte, or it is treated as corrupt. A failing tier is logged once
// and skipped (its breaker sets it aside while it keeps failing): a cache
// problem never fails a request. With the cache disabled, every request
// compiles and nothing is read or written on disk.
#include <kcache/advanced.h>
#include <kcache/cache.h>
#include <kcache/version.h>

#include <chrono>
#include <set>

#include "base/hash.h"
#include "base/log.h"
#include "base/mutex.h"
#include "core/cache_internal.h"
#include "core/cache_parts.h"
#include "core/client_entries.h"
#include "core/compile_step.h"
#include "core/config.h"
#include "core/kernel_of_entry.h"
#include "core/lock_wait.h"
#include "core/prepared_state.h"
#include "core/single_flight.h"
#include "core/tier_list.h"
#include "core/tier_walk.h"
#include "env/env.h"
#include "env/temp_dir.h"
#include "env/trusted_path.h"
#include "format/kdb_file.h"
#include "key/files_read.h"
#include "key/key_builder.h"
#include "package/kernel_recorder.h"
#include "package/package_metadata.h"
#include "package/package_transfer.h"
#include "store/memory/memory_tier.h"
#include "store/system/system_tier.h"
#include "store/tier.h"
#include "store/user/user_tier.h"
#include "upkeep/folder_stats.h"
#include "upkeep/garbage_collection.h"
#include "upkeep/remembered_failures.h"
#include "upkeep/stats_counters.h"
#include "upkeep/stats_sharing.h"
#include "upkeep/user_entries.h"

namespace kcache {

namespace {

// What a lookup is for: the request and the compiler that would build it.
struct Wanted {
  const KernelRequest& request;
  const Compiler& compiler;
};

}  // namespace

class Cache::Impl final : public TierEvents {
 public:
  Impl(ResolvedConfig config, Env& env, LogSink sink)
      : config_(std::move(config)), env_(env), log_(config_.log_level, std::move(sink)) {
    for (const auto& warning : config_.warnings)
      log_.warn_once("Config:" + warning, "Config", warning);
    prepare_hashing();  // keys are derived even with the cache off
    if (!config_.record_path.empty()) {
      // A manifest shared on purpose (KCACHE_RECORD_SHARED) is not held
      // to the trust rule.
      const bool shared = parse_bool(config_.find("record_shared")->value).value_or(false);
      recorder_ = std::make_unique<KernelRecorder>(config_.record_path, shared, env_, log_);
    }
    if (!config_.enabled) return;
    // In lookup order (core/tier_list.h). Each is guarded: one that keeps
    // failing is skipped for a while rather than called on every request.
    const auto trip = [this] { stats_.add(Stat::kBreakerTrips); };
    if (config_.memory_cache_size > 0) {
      tiers_.add(TierKind::kMemory, Stat::kMemoryHits, make_memory_tier(config_.memory_cache_size),
                 TierRole::kCopy, {}, trip);
    }
    if (!config_.system_db_path.empty()) {
      tiers_.add(TierKind::kSystem, Stat::kSystemHits,
                 make_system_tier(config_.system_db_path, config_.trusted_keys, env_, log_, *this),
                 TierRole::kNone, {.read_only = true}, trip);
    }
    if (!config_.user_dir.empty()) {
      const userlog::Limits limits{config_.max_size, config_.max_entries, config_.max_age.count()};
      tiers_.add(TierKind::kUser, Stat::kUserHits,
                 make_user_tier({config_.user_dir, config_.sync, config_.shared_cache, limits},
                                env_, log_, *this),
                 TierRole::kHome, {.copy_before_keeping = true}, trip);
      // Made here when the folder exists, else by the first write or hit.
      if (env_.is_dir(config_.user_dir)) sharing_.folder_exists();
      // Key heads for later processes: not in a folder others write (a
      // record says which headers a request reads), nor in one shared on
      // purpose (each user's records would be another's to trust).
      if (!config_.shared_cache) {
        memo_.records = std::make_unique<ScanRecords>(config_.user_dir + "/scans", env_, [this] {
          return !untrusted_folder_reason(config_.user_dir, env_).has_value();
        });
      }
    }
    compression_ = parse_compression(config_.compression).value_or(Compression::kNone);
    clients_.set_compression(compression_);
  }

  // The home tier first: it waits for its background eviction pass, which
  // reports to this object (on_corrupt) and its members.
  ~Impl() override { tiers_.clear(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void on_corrupt(std::string_view tier, const std::string& where, const Status& problem) override {
    stats_.add(Stat::kCorruptEntries);
    // A problem that names the file first ("<file> has ..."): said once.
    std::string why = problem.message();
    if (why.starts_with(where + " ")) why = "it " + why.substr(where.size() + 1);
    log_.warn_once(
        "Integrity:" + where, "Integrity",
        "Bad " + std::string(tier) + " cache file " + where + " (" + why + "); it is not used" +
            (tier == "user" ? " (kept in quarantine/); what it held is compiled again" : ""));
  }

  void on_evicted(std::string_view, std::uint64_t evicted, std::uint64_t expired) override {
    stats_.add(Stat::kEvicted, evicted);
    stats_.add(Stat::kExpired, expired);
  }

  // Resolves the target and derives the key; a request kcache cannot key
  // (it cannot know all its compile reads, or a header cannot be read) is
  // prepared unkeyed, to be compiled without the cache.
  Result<PreparedRequest::State> prepare(const KernelRequest& request, const Target& requested,
                                         const Compiler& compiler) const {
    auto target = compiler.resolve_target(requested);
    if (!target) return target.status();
    if (const std::string db = target->db_basename(); !valid_db_name(db)) {
      return Status::invalid_argument("target '" + db + "' cannot name a database file");
    } else if (db.starts_with(kClientDbPrefix)) {
      return Status::invalid_argument("target '" + db + "' names a client namespace's database");
    }
    PreparedRequest::State state{this, &compiler, &request, std::move(*target)};
    auto text = build_key_text(request, compiler, state.target, env_, &memo_);
    if (text) {
      state.key = text->key();
      state.text = std::move(*text);
    } else if (text.status().code() == StatusCode::kIoError ||
               text.status().code() == StatusCode::kNotSupported) {
      state.unkeyed = text.status();
    } else {
      return text.status();
    }
    return state;
  }

  Result<CachedKernel> get_or_compile(const KernelRequest& request, Compiler& compiler,
                                      const GetOptions& options) {
    // A request refused whole (a target the compiler does not take) is
    // none the cache answered: not counted, so that requests stay the sum
    // of what answered them (stats_counters.h).
    auto prepared = prepare(request, options.target ? *options.target : request.target, compiler);
    if (!prepared) return prepared.status();
    return get_or_compile(*prepared, compiler, options);
  }

  Result<CachedKernel> get_or_compile(const PreparedRequest::State& prepared, Compiler& compiler,
                                      const GetOptions& options) {
    if (prepared.cache != this || prepared.compiler != &compiler) {
      return Status::invalid_argument(
          "the request was prepared by another cache or for another compiler");
    }
    if (!prepared.text) return compile_unkeyed(prepared, compiler);
    stats_.add(Stat::kRequests);
    const KernelRequest& request = *prepared.request;
    const Target& target = prepared.target;
    const DbNames names{target.db_basename(), target.arch_basename(), &compiler.identity()};
    const KeyText& material_text = *prepared.text;
    const CacheKey& key = prepared.key;
    if (recorder_) recorder_->record(request, compiler, target, key, material_text);
    if (!config_.enabled) {
      Keyed unstored{key, material_text.joined(), names.exact};
      return compile_only(request, compiler, target, &unstored);
    }

    const Wanted wanted{request, compiler};
    if (auto hit = lookup(names, key, material_text, target, wanted, options.keep_in_memory)) {
      return std::move(*hit);
    }

    auto [flight, leader] = flights_.join(key);
    if (!leader) {
      Result<CachedKernel> shared = flight->wait();
      served_by_leader(shared);
      return shared;
    }
    // A leader that finished between our lookup and join left it in memory.
    if (Tier* copies = tiers_.copy_tier()) {
      if (auto done =
              lookup(names, key, material_text, target, wanted, options.keep_in_memory, copies)) {
        flights_.finish(key, flight, *done);
        return std::move(*done);
      }
    }
    // Across processes: hold the key's lock while compiling and storing, or
    // find the entry another process stored while we waited for it.
    std::unique_ptr<FileLock> lock;
    if (auto stored =
            wait_for_other_processes(names, key, material_text, target, wanted, options, lock)) {
      flights_.finish(key, flight, *stored);
      return std::move(*stored);
    }
    Keyed keyed{key, material_text.joined(), names.exact};
    if (auto failed = remembered_failure(names, keyed.material)) {
      flights_.finish(key, flight, *failed);
      return *failed;
    }
    // What the key was derived from, as it is just before the compile
    // (stamps included: a header edited and edited back while it compiles
    // keeps its digest, not its stamp).
    KeyedFiles before;
    const bool reads_disk = reads_files_on_disk(keyed);
    if (reads_disk) {
      auto now = build_key_text(request, compiler, target, env_, &memo_, &before);
      if (!now || now->key() != key) before.probes.push_back({"(the key moved)", std::nullopt});
    }
    auto compiled = compile(request, compiler, target, &keyed);
    if (!compiled) {
      KeyedFiles ignored;
      if (compiled.status().code() == StatusCode::kCompileError &&
          !inputs_changed(request, compiler, target, keyed, before, ignored)) {
        remember_failure(names.exact, keyed.material, compiled.status());
      }
      flights_.finish(key, flight, compiled.status());
      return compiled.status();
    }
    KeyedFiles rechecked;
    if (reads_disk && inputs_changed(request, compiler, target, keyed, before, rechecked)) {
      // A header changed while the kernel compiled: the binary may be of
      // either version, so it is not kept under either key.
      stats_.add(Stat::kUncacheable);
      log_.info_once("Race:" + key.hex(), "Key",
                     "a header changed while kernel " + key.hex().substr(0, 16) +
                         " compiled; the binary is returned but not cached");
      flights_.finish(key, flight, compiled->kernel);
      return std::move(compiled->kernel);
    }
    if (compiled->unstorable.empty() && !compiled->files_read.empty()) {
      auto manifest = files_read_fields(compiled->files_read, compiled->started_ns, rechecked.files,
                                        env_, memo_.digests);
      if (manifest) {
        Fields& metadata = compiled->entry.metadata;
        metadata.insert(metadata.end(), manifest->begin(), manifest->end());
        compiled->kernel.metadata_fields = metadata;
      } else {
        compiled->unstorable = manifest.status().message();
      }
    }
    if (!compiled->unstorable.empty()) {
      stats_.add(Stat::kUncacheable);
      log_.info_once("Key:" + compiled->unstorable, "Key", "not cached: " + compiled->unstorable);
      flights_.finish(key, flight, compiled->kernel);
      return std::move(compiled->kernel);
    }
    // Waiting threads get the binary before it reaches the disk; only the
    // caller waits for the user tier write, and other processes for the
    // lock, which is released once the entry is in place.
    Tier* copies = tiers_.copy_tier();
    if (copies != nullptr && options.keep_in_memory) copies->put(names.exact, compiled->entry, {});
    flights_.finish(key, flight, compiled->kernel);
    if (tiers_.home() != nullptr) store_in_home(names.exact, compiled->entry);
    return std::move(compiled->kernel);
  }

  void reject(const CachedKernel& kernel, std::string_view why) {
    stats_.add(Stat::kRejected);
    {
      MutexLock lock(rejected_mutex_);
      rejected_.insert(kernel.key);
    }
    // From every tier that can remove it; the read-only ones are passed
    // over for this key from now on (lookup).
    for (const TierSlot& slot : tiers_.slots()) {
      if (!slot.read_only) (void)slot.tier->remove(kernel.db, kernel.key);
    }
    log_.warn_once("Rejected:" + kernel.key.hex(), "Integrity",
                   "The driver refused the binary of kernel " + kernel.key.hex().substr(0, 16) +
                       " from the " + std::string(tier_name(kernel.tier)) + " tier (" +
                       std::string(why) + "); it is removed and compiled again");
  }

  Result<CachedKernel> refine(const CachedKernel& kernel, std::span<const std::uint8_t> binary,
                              std::string_view why) {
    Tier* home = tiers_.home();
    if (!config_.enabled || home == nullptr) {
      return Status::not_supported("no user cache to refine kernel " +
                                   kernel.key.hex().substr(0, 16) + " in");
    }
    if (binary.empty()) return Status::invalid_argument("a refined binary cannot be empty");
    const DbNames names{kernel.db, kernel.target.arch_basename(), nullptr};
    auto stored = home->get(names, kernel.key);
    if (!stored) return stored.status();
    const auto held = *stored ? (*stored)->payload() : std::span<const std::uint8_t>{};
    if (!*stored ||
        !std::equal(held.begin(), held.end(), kernel.binary().begin(), kernel.binary().end())) {
      return Status::not_found("the user cache no longer holds the binary of kernel " +
                               kernel.key.hex().substr(0, 16));
    }
    Entry refined;
    refined.key = kernel.key;
    refined.created_unix = (*stored)->created_unix;
    refined.material = std::move((*stored)->material);
    refined.metadata = std::move((*stored)->metadata);
    std::erase_if(refined.metadata, [](const auto& field) { return field.first == kRefinedField; });
    refined.metadata.emplace_back(kRefinedField, std::string(why));
    refined.storage = ByteBuffer::copy_of(binary);
    refined.payload_size = binary.size();
    auto encoded = encode_entry(refined, compression_);
    if (!encoded) return encoded.status();
    if (Status put = home->put(kernel.db, refined, *encoded); !put.is_ok()) {
      stats_.add(Stat::kStoreFailures);
      return put;
    }
    stats_.add(Stat::kBytesStored, encoded->size());
    if (Tier* copies = tiers_.copy_tier()) copies->put(kernel.db, refined, {});
    return kernel_from(std::move(refined), kernel.tier, kernel.target, kernel.db);
  }

  Result<std::pair<CacheKey, KeyMaterial>> key_for(const KernelRequest& request,
                                                   const Compiler& compiler) const {
    auto target = compiler.resolve_target(request.target);
    if (!target) return target.status();
    auto material =
        build_key_material(request, compiler.identity(), compiler.inputs(), *target, env_);
    if (!material) return material.status();
    return std::pair{material->digest(), std::move(*material)};
  }

  CacheStats stats() const {
    CacheStats stats = cache_stats_of(stats_.local_values());
    stats.tiers = tiers_.counts();
    stats.namespaces = clients_.counts();
    return stats;
  }

  // Client-keyed entries (core/client_entries.h).
  ClientEntries& clients() { return clients_; }

  const ResolvedConfig& config() const { return config_; }

  // What CacheAdmin works on (core/cache_parts.h).
  CacheParts parts() { return {config_, env_, log_, tiers_, memo_, sharing_, compression_}; }

 private:
  bool was_rejected(const CacheKey& key) const {
    MutexLock lock(rejected_mutex_);
    return rejected_.contains(key);
  }

  // `wanted`: the request and its compiler, which may pass over the binary
  // it stored in a writable tier (Compiler::stored_binary_serves); the
  // compile that follows replaces it.
  // `keep_in_memory`: GetOptions'.
  // `only`: look in that tier alone (the home tier while waiting on another
  // process that is compiling the key; the copy tier after joining a flight).
  std::optional<CachedKernel> lookup(const DbNames& names, const CacheKey& key,
                                     const KeyText& material, const Target& target,
                                     const Wanted& wanted, bool keep_in_memory,
                                     const Tier* only = nullptr) {
    auto found = find_in_tiers(
        {tiers_, log_, *this, sharing_}, names, key, keep_in_memory, only,
        [&](const TierSlot& slot) { return slot.read_only && was_rejected(key); },
        [&](std::string_view stored) { return material.matches(stored); },
        [&](const TierSlot& slot, const Entry& entry) {
          const std::string tier(slot.tier->name());
          if (!files_read_unchanged(entry.metadata, env_, memo_.digests)) {
            log_.debug("Cache", "entry " + key.hex() + " in the " + tier +
                                    " tier was built from a file that has changed since; "
                                    "rebuilding");
            return false;
          }
          // A read-only tier's binary (a package's) is served as it is: a
          // compile could not replace it, and a binary beats a compile.
          if (!slot.read_only &&
              !wanted.compiler.stored_binary_serves(wanted.request, entry.metadata)) {
            log_.debug("Cache", "entry " + key.hex() + " in the " + tier +
                                    " tier does not serve this request, its compiler says; "
                                    "rebuilding");
            return false;
          }
          return true;
        });
    if (!found) return std::nullopt;
    auto& [entry, slot] = *found;
    stats_.add(slot->hits);
    stats_.add(Stat::kBytesServed, entry.payload_size);
    if (auto micros = compile_micros_of(entry.metadata)) {
      stats_.add(Stat::kCompileMicrosSaved, *micros);
    }
    return kernel_from(std::move(entry), slot->kind, target, names.exact);
  }

  // A request that waited for another thread's compile of its key (single
  // flight) is answered from this process's memory, as a hit of the memory
  // tier would be: counted as one (the bytes, and the compile it did not
  // make), or, when that compile failed, as a compile error answered
  // without compiling. Counted as nothing, it left requests larger than
  // hits and compiles together (64 requests = 41 + 5 + 18 unaccounted).
  void served_by_leader(Result<CachedKernel>& shared) {
    if (!shared) {
      stats_.add(Stat::kFailureHits);
      return;
    }
    shared->tier = TierKind::kMemory;
    stats_.add(Stat::kMemoryHits);
    stats_.add(Stat::kBytesServed, shared->binary().size());
    if (auto micros = compile_micros_of(shared->metadata_fields)) {
      stats_.add(Stat::kCompileMicrosSaved, *micros);
    }
  }

  // Takes the key's cross-process lock (into `lock`) in the home tier,
  // or finds the entry another process stored while we waited for it
  // (core/lock_wait.h).
  std::optional<CachedKernel> wait_for_other_processes(const DbNames& names, const CacheKey& key,
                                                       const KeyText& material,
                                                       const Target& target, const Wanted& wanted,
                                                       const GetOptions& options,
                                                       std::unique_ptr<FileLock>& lock) {
    Tier* home = tiers_.home();
    if (home == nullptr) return std::nullopt;
    const LockWait wait{*home, config_.lock_timeout, config_.user_dir, stats_, log_};
    return kcache::wait_for_other_processes(
        wait, names.exact, key,
        [&] { return lookup(names, key, material, target, wanted, options.keep_in_memory, home); },
        lock);
  }

  // The negative cache. A compile error is stored in the home tier as an
  // entry of its own key, the key of "kcache.failure 1\n" + material: the
  // message in its metadata, the compiler's log as its payload. It is
  // answered for `failure_ttl`, then retried. Only kCompileError is kept:
  // the same compiler fails the same input the same way, while a missing
  // library or a crash may not happen next time.
  std::optional<Status> remembered_failure(const DbNames& names, std::string_view material) {
    Tier* home = tiers_.home();
    if (home == nullptr || config_.failure_ttl.count() == 0) return std::nullopt;
    auto failed =
        kcache::remembered_failure(*home, names, material, config_.failure_ttl, env_.now_unix());
    if (failed) stats_.add(Stat::kFailureHits);
    return failed;
  }

  void remember_failure(const std::string& db, std::string_view material, const Status& error) {
    if (tiers_.home() == nullptr || config_.failure_ttl.count() == 0) return;
    store_in_home(db, failure_entry(material, error, env_.now_unix()));
  }

  Result<Compiled> compile(const KernelRequest& request, Compiler& compiler, const Target& target,
                           const Keyed* keyed) {
    return compile_entry(request, compiler, target, keyed, env_, stats_);
  }

  bool inputs_changed(const KernelRequest& request, const Compiler& compiler, const Target& target,
                      const Keyed& keyed, const KeyedFiles& before, KeyedFiles& rechecked) {
    return kcache::inputs_changed(request, compiler, target, keyed, before, rechecked, env_, memo_);
  }

  // A request kcache cannot key is compiled and kept nowhere.
  Result<CachedKernel> compile_unkeyed(const PreparedRequest::State& prepared, Compiler& compiler) {
    stats_.add(Stat::kRequests);
    const Status& why = prepared.unkeyed;
    if (why.code() == StatusCode::kIoError) {
      log_.warn_once("Key:" + why.message(), "Key",
                     why.message() + "; compiling without the cache");
    } else {
      // Not a problem of the cache: kcache cannot know everything this
      // compile reads, so it is not cached (err towards a miss).
      stats_.add(Stat::kUncacheable);
      log_.info_once("Key:" + why.message(), "Key", "not cached: " + why.message());
    }
    return compile_only(*prepared.request, compiler, prepared.target, nullptr);
  }

  // Compiles without keeping the result anywhere.
  Result<CachedKernel> compile_only(const KernelRequest& request, Compiler& compiler,
                                    const Target& target, const Keyed* keyed) {
    auto compiled = compile(request, compiler, target, keyed);
    if (!compiled) return compiled.status();
    return std::move(compiled->kernel);
  }

  void store_in_home(const std::string& db, const Entry& entry) {
    auto encoded = encode_entry(entry, compression_);
    Status stored = encoded ? tiers_.home()->put(db, entry, *encoded) : encoded.status();
    if (stored.is_ok()) {
      stats_.add(Stat::kBytesStored, encoded->size());
      // The folder exists now: counts from here on are shared.
      if (!stats_.shared()) sharing_.folder_exists();
    }
    if (!stored.is_ok()) {
      stats_.add(Stat::kStoreFailures);
      // A refused folder was said once by the tier.
      if (stored.code() == StatusCode::kNotSupported) return;
      log_.warn_once("UserDb:write:" + config_.user_dir, "UserDb",
                     "Cannot write to the user cache " + config_.user_dir + ": " +
                         stored.message() + "; kernels are compiled but not kept");
    }
  }

  const ResolvedConfig config_;
  Env& env_;
  const Logger log_;
  Compression compression_ = Compression::kNone;
  std::unique_ptr<KernelRecorder> recorder_;  // KCACHE_RECORD, when set
  TierList tiers_;
  SingleFlight<CacheKey, Result<CachedKernel>> flights_;
  mutable KeyMemo memo_;  // of headers on disk and scans, reused while unchanged
  mutable Mutex rejected_mutex_;
  std::set<CacheKey> rejected_ GUARDED_BY(rejected_mutex_);  // refused by the driver
  mutable StatsCounters stats_;
  StatsSharing sharing_{config_, env_, log_, stats_};
  ClientEntries clients_{
      {config_, env_, log_, tiers_, stats_, sharing_, *this, Compression::kNone}};
};

Cache::Cache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Cache::~Cache() = default;

Result<std::unique_ptr<Cache>> open_cache_with_env(const CacheOptions& options, Env& env) {
  ResolvedConfig config = resolve_config(options, env);
  return std::unique_ptr<Cache>(
      new Cache(std::make_unique<Cache::Impl>(std::move(config), env, options.log_sink)));
}

Result<std::unique_ptr<Cache>> Cache::open(const CacheOptions& options) {
  return open_cache_with_env(options, Env::posix());
}

Result<CachedKernel> Cache::get_or_compile(const KernelRequest& request, Compiler& compiler,
                                           const GetOptions& options) {
  return impl_->get_or_compile(request, compiler, options);
}
Result<std::optional<CachedKernel>> Cache::get(std::string_view name_space, std::string_view key) {
  return impl_->clients().get(name_space, key);
}
Status Cache::put(std::string_view name_space, std::string_view key,
                  std::span<const std::uint8_t> bytes, const EntryMetadata& metadata) {
  return impl_->clients().put(name_space, key, bytes, metadata);
}
Result<ClientClaim> Cache::claim(std::string_view name_space, std::string_view key) {
  auto state = impl_->clients().claim(name_space, key);
  if (!state) return state.status();
  return ClientClaim(std::move(*state));
}
CacheStats Cache::stats() const { return impl_->stats(); }
const ResolvedConfig& Cache::config() const { return impl_->config(); }

CacheParts parts_of(Cache::Impl& impl) { return impl.parts(); }

PreparedRequest::PreparedRequest(std::unique_ptr<State> state) : state_(std::move(state)) {}
PreparedRequest::PreparedRequest(PreparedRequest&&) noexcept = default;
PreparedRequest& PreparedRequest::operator=(PreparedRequest&&) noexcept = default;
PreparedRequest::~PreparedRequest() = default;
bool PreparedRequest::keyed() const { return state_->text.has_value(); }
const CacheKey& PreparedRequest::key() const { return state_->key; }
const Target& PreparedRequest::target() const { return state_->target; }

AdvancedCache::AdvancedCache(Cache& cache) : impl_(*cache.impl_) {}
Result<PreparedRequest> AdvancedCache::prepare(const KernelRequest& request, const Target& target,
                                               const Compiler& compiler) const {
  auto state = impl_.prepare(request, target, compiler);
  if (!state) return state.status();
  return PreparedRequest(std::make_unique<PreparedRequest::State>(std::move(*state)));
}
Result<CachedKernel> AdvancedCache::get_or_compile(const PreparedRequest& request,
                                                   Compiler& compiler, const GetOptions& options) {
  return impl_.get_or_compile(*request.state_, compiler, options);
}
void AdvancedCache::reject(const CachedKernel& kernel, std::string_view why) {
  impl_.reject(kernel, why);
}
Result<CachedKernel> AdvancedCache::refine(const CachedKernel& kernel,
                                           std::span<const std::uint8_t> binary,
                                           std::string_view why) {
  return impl_.refine(kernel, binary, why);
}
Result<std::pair<CacheKey, KeyMaterial>> AdvancedCache::key_for(const KernelRequest& request,
                                                                const Compiler& compiler) const {
  return impl_.key_for(request, compiler);
}

}  // namespace kcache
