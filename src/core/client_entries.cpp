#include "core/client_entries.h"

#include <unistd.h>

#include <chrono>
#include <utility>

#include "core/kernel_of_entry.h"
#include "core/lock_wait.h"
#include "core/tier_walk.h"
#include "format/entry.h"
#include "upkeep/namespace_stats.h"

namespace kcache {

namespace {

constexpr std::size_t kMaxNamespace = 64;
constexpr std::size_t kMaxKey = 4096;

bool valid_namespace(std::string_view name) {
  if (name.empty() || name.size() > kMaxNamespace || name.front() == '.') return false;
  for (unsigned char c : name) {
    const bool fine = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-' || c == '.';
    if (!fine) return false;
  }
  return true;
}

}  // namespace

Result<ClientKey> client_key(std::string_view name_space, std::string_view key) {
  if (!valid_namespace(name_space)) {
    return Status::invalid_argument("namespace '" + std::string(name_space.substr(0, 80)) +
                                    "' is not 1 to 64 letters, digits, '_', '-' or '.' (not "
                                    "starting with '.')");
  }
  if (key.empty() || key.size() > kMaxKey) {
    return Status::invalid_argument("a client key is 1 to 4096 bytes, not " +
                                    std::to_string(key.size()));
  }
  ClientKey k;
  k.name_space = std::string(name_space);
  k.db = std::string(kClientDbPrefix) + k.name_space;
  const KeyMaterial material(
      {{"kcache.client", "1"}, {"namespace", k.name_space}, {"key", std::string(key)}});
  k.material = material.serialize();
  k.key = material.digest();
  return k;
}

Result<std::optional<CachedKernel>> ClientEntries::get(std::string_view name_space,
                                                       std::string_view key) {
  auto k = client_key(name_space, key);
  if (!k) return k.status();
  auto found = lookup(*k);
  count(k->name_space,
        {.gets = 1, .hits = found ? 1u : 0u, .bytes_served = found ? found->binary().size() : 0});
  return found;
}

Status ClientEntries::put(std::string_view name_space, std::string_view key,
                          std::span<const std::uint8_t> bytes, const EntryMetadata& metadata) {
  auto k = client_key(name_space, key);
  if (!k) return k.status();
  return store(*k, bytes, metadata, nullptr);
}

Result<std::unique_ptr<ClientClaim::State>> ClientEntries::claim(std::string_view name_space,
                                                                 std::string_view key) {
  auto k = client_key(name_space, key);
  if (!k) return k.status();
  auto claim = std::make_unique<ClientClaim::State>();
  claim->owner = this;
  claim->key = std::move(*k);
  const ClientKey& ck = claim->key;
  const auto answered = [&](std::optional<CachedKernel> found, bool waited) {
    count(ck.name_space, {.gets = 1,
                          .hits = found ? 1u : 0u,
                          .waits = waited ? 1u : 0u,
                          .bytes_served = found ? found->binary().size() : 0});
    claim->found = std::move(found);
    return std::move(claim);
  };
  const auto deadline = std::chrono::steady_clock::now() + p_.config.lock_timeout;
  bool waited = false;
  while (true) {
    if (auto found = lookup(ck)) return answered(std::move(found), waited);
    auto [flight, leader] = flights_.join(ck.key);
    if (!leader) {
      // Another thread of this process holds it: its bytes, or, when it
      // abandons, a claim of our own.
      waited = true;
      auto got = flight->wait_until(deadline);
      if (!got) return answered(std::nullopt, waited);  // ran out: compute unclaimed
      if (*got) return answered(std::move(*got), waited);
      continue;
    }
    claim->flight = flight;
    claim->held = true;
    if (Tier* home = p_.tiers.home()) {
      const LockWait wait{*home, p_.config.lock_timeout, p_.config.user_dir, p_.stats, p_.log};
      auto stored = wait_for_other_processes(
          wait, ck.db, ck.key, [&] { return lookup(ck, home); }, claim->lock);
      if (stored) {
        flights_.finish(ck.key, flight, stored);
        claim->flight.reset();
        claim->held = false;
        claim->lock.reset();
        return answered(std::move(stored), true);
      }
    }
    return answered(std::nullopt, waited);
  }
}

Status ClientEntries::finish(ClientClaim::State& claim, std::span<const std::uint8_t> bytes,
                             const EntryMetadata& metadata) {
  if (!claim.held) return Status::invalid_argument("this claim does not hold its key");
  std::optional<CachedKernel> kept;
  Status stored = store(claim.key, bytes, metadata, &kept);
  flights_.finish(claim.key.key, claim.flight, std::move(kept));
  claim.flight.reset();
  claim.lock.reset();  // after the write: another process now finds it
  claim.held = false;
  return stored;
}

void ClientEntries::abandon(ClientClaim::State& claim) {
  if (!claim.held) return;
  flights_.finish(claim.key.key, claim.flight, std::nullopt);
  claim.flight.reset();
  claim.lock.reset();
  claim.held = false;
}

std::vector<NamespaceCounts> ClientEntries::counts() const {
  MutexLock lock(counts_mutex_);
  std::vector<NamespaceCounts> all;
  all.reserve(counts_.size());
  for (const auto& [name, counts] : counts_) all.push_back(counts.here);
  return all;
}

std::optional<CachedKernel> ClientEntries::lookup(const ClientKey& k, const Tier* only) {
  const DbNames names{k.db, k.db, nullptr, /*quiet_when_missing=*/true};
  auto found = find_in_tiers(
      {p_.tiers, p_.log, p_.events, p_.sharing}, names, k.key, /*keep_in_memory=*/true, only,
      [](const TierSlot&) { return false; },
      [&](std::string_view stored) { return stored == k.material; },
      [](const TierSlot&, const Entry&) { return true; });
  if (!found) return std::nullopt;
  return kernel_from(std::move(found->first), found->second->kind, Target{}, k.db);
}

Status ClientEntries::store(const ClientKey& k, std::span<const std::uint8_t> bytes,
                            const EntryMetadata& metadata, std::optional<CachedKernel>* kept) {
  if (bytes.empty()) return Status::invalid_argument("a client entry cannot be empty");
  Entry entry;
  entry.key = k.key;
  entry.created_unix = p_.env.now_unix();
  entry.material = k.material;
  entry.metadata = metadata;
  entry.storage = ByteBuffer::copy_of(bytes);
  entry.payload_size = bytes.size();
  if (kept != nullptr) *kept = kernel_from(entry, TierKind::kMemory, Target{}, k.db);
  if (!p_.config.enabled) return Status::ok();  // nothing is kept, as for kernels
  if (Tier* copies = p_.tiers.copy_tier()) copies->put(k.db, entry, {});
  Tier* home = p_.tiers.home();
  if (home == nullptr) return Status::ok();
  auto encoded = encode_entry(entry, p_.compression);
  if (!encoded) return encoded.status();
  Status stored = home->put(k.db, entry, *encoded);
  if (!stored.is_ok()) {
    p_.stats.add(Stat::kStoreFailures);
    return stored;
  }
  p_.stats.add(Stat::kBytesStored, encoded->size());
  if (!p_.stats.shared()) p_.sharing.folder_exists();
  count(k.name_space, {.puts = 1, .bytes_stored = encoded->size()});
  return Status::ok();
}

void ClientEntries::count(const std::string& name_space, const NamespaceCounts& added) {
  MutexLock lock(counts_mutex_);
  Counts& counts = counts_[name_space];
  NamespaceCounts& here = counts.here;
  here.name = name_space;
  here.gets += added.gets;
  here.hits += added.hits;
  here.puts += added.puts;
  here.waits += added.waits;
  here.bytes_served += added.bytes_served;
  here.bytes_stored += added.bytes_stored;
  if (counts.shard != nullptr) {
    add_namespace_counts(counts.shard, added);
  } else if (!counts.open_failed && p_.stats.shared()) {
    share(counts);
  }
}

void ClientEntries::share(Counts& counts) {
  auto file = StatsFile::open(p_.env, namespace_stats_path(p_.config.user_dir, counts.here.name),
                              /*create=*/true, p_.sharing.file_mode(), p_.sharing.said_set_aside());
  if (!file) {
    counts.open_failed = true;
    p_.log.debug("Stats", "cannot share the counts of namespace " + counts.here.name + ": " +
                              file.status().message());
    return;
  }
  counts.file = std::move(*file);
  counts.shard = counts.file->shard_for(static_cast<std::uint64_t>(::getpid()));
  add_namespace_counts(counts.shard, counts.here);  // what was counted before, this call's too
}

// The public claim, over its state.
ClientClaim::ClientClaim(std::unique_ptr<State> state) : state_(std::move(state)) {}
ClientClaim::ClientClaim(ClientClaim&&) noexcept = default;
ClientClaim& ClientClaim::operator=(ClientClaim&& other) noexcept {
  if (this != &other) {
    abandon();
    state_ = std::move(other.state_);
  }
  return *this;
}
ClientClaim::~ClientClaim() { abandon(); }
const std::optional<CachedKernel>& ClientClaim::found() const { return state_->found; }
bool ClientClaim::held() const { return state_ && state_->held; }
Status ClientClaim::finish(std::span<const std::uint8_t> bytes, const EntryMetadata& metadata) {
  if (!state_) return Status::invalid_argument("this claim was moved from");
  return state_->owner->finish(*state_, bytes, metadata);
}
void ClientClaim::abandon() {
  if (state_) state_->owner->abandon(*state_);
}

}  // namespace kcache
