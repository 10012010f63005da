// Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/):
// entries, packages and indexes made by the library itself, real
// configuration and key text, and choices for the include graphs. Run it
// again when a format changes:
//   build-fuzz/tests/fuzz/kcache_fuzz_make_corpus tests/fuzz/corpus
// Seeds it does not name (saved crash inputs, regress-*) are left alone.
#include <kcache/compiler.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/hash.h"
#include "base/log.h"
#include "env/temp_dir.h"
#include "format/compression.h"
#include "format/entry.h"
#include "format/kdb_file.h"
#include "key/key_builder.h"
#include "sign/ed25519.h"
#include "store/user/user_tier.h"

namespace kcache {
namespace {

constexpr std::int64_t kCreated = 1700000000;

void write(const std::filesystem::path& path, std::string_view bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

void write(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  write(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

template <class T>
T must(Result<T> result, const char* what) {
  if (!result) {
    std::fprintf(stderr, "%s: %s\n", what, result.status().to_string().c_str());
    std::exit(1);
  }
  return std::move(*result);
}

// Key text as the cache derives it for a small OpenCL request.
std::string real_key_text(const std::string& options, const std::string& kernel) {
  KernelRequest request;
  request.source = "#include \"common.h\"\nkernel void " + kernel +
                   "(global float* x) { x[get_global_id(0)] *= SCALE; }\n";
  request.kernel_names = {kernel};
  request.options = options;
  request.headers = {{"common.h", "#define SCALE 2.0f\n"}};
  CompilerIdentity compiler;
  compiler.backend = "opencl";
  compiler.id = "pocl";
  compiler.version = "OpenCL 3.0 PoCL 3.1 Linux, LLVM 15";
  CompilerInputs inputs;
  inputs.dialect = "opencl";
  auto target = must(Target::parse("cpu-haswell"), "target");
  return must(build_key_text(request, compiler, inputs, target, Env::posix()), "key text").joined();
}

std::vector<std::uint8_t> make_entry(const std::string& material, const Fields& metadata,
                                     const std::string& payload, Compression compression) {
  Entry entry;
  entry.material = material;
  entry.key = CacheKey(xxh3_128(material));
  entry.created_unix = kCreated;
  entry.metadata = metadata;
  entry.storage =
      ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size()});
  entry.payload_size = payload.size();
  return must(encode_entry(entry, compression), "encode");
}

// Something shaped like a small ELF binary, partly repetitive.
std::string fake_binary(std::size_t size, char fill) {
  std::string bytes(
      "\x7f"
      "ELF\x02\x01\x01",
      7);
  while (bytes.size() < size) bytes += std::string(32, fill) + "kernel.text";
  bytes.resize(size);
  return bytes;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace
}  // namespace kcache

int main(int argc, char** argv) {
  using namespace kcache;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const std::filesystem::path root = argv[1];
  using namespace std::string_literals;

  // Entries.
  const std::string material = real_key_text("-DBLOCK=128 -cl-fast-relaxed-math", "scale");
  const Fields pocl{{"format", "poclbin"}};
  const Fields lowered{{"format", "cubin"}, {"lowered", "add<float>\n_Z3addIfEvPT_\\tail\r"}};
  auto plain = make_entry(material, pocl, fake_binary(300, 'p'), Compression::kNone);
  auto packed = make_entry(real_key_text("-O3 -I include", "scale"), pocl, fake_binary(4096, 'z'),
                           Compression::kZstd);
  auto empty = make_entry(real_key_text("", "empty"), lowered, "", Compression::kNone);
  const std::filesystem::path entries = root / "fuzz_entry_decoder";
  write(entries / "seed-plain", plain);
  write(entries / "seed-zstd", packed);
  write(entries / "seed-empty-payload", empty);

  // Packages and user indexes.
  auto temp = must(TempDir::create("kcache-corpus-"), "temp dir");
  auto kdb = [&](const std::string& name,
                 const std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>>& contents,
                 const KdbSigner* signer = nullptr) {
    const std::string path = temp.path() + "/" + name;
    Fields meta{{"producer", "kcache 0.2.0"}, {"db", "cpu-haswell"}, {"created", "1700000000"}};
    if (Status s = write_kdb(Env::posix(), path, contents, meta, signer); !s.is_ok()) {
      std::fprintf(stderr, "write_kdb: %s\n", s.to_string().c_str());
      std::exit(1);
    }
    write(root / "fuzz_kdb_open" / ("seed-" + name), read_all(path));
  };
  auto key_of = [](const std::vector<std::uint8_t>& bytes) {
    CacheKey::Bytes key;
    std::copy(bytes.begin() + 16, bytes.begin() + 16 + CacheKey::kSize, key.begin());
    return CacheKey(key);
  };
  kdb("empty.kdb", {});
  kdb("one.kdb", {{key_of(plain), plain}});
  kdb("three.kdb", {{key_of(plain), plain}, {key_of(packed), packed}, {key_of(empty), empty}});
  // Signed (a fresh key each time the corpus is made).
  auto pair = must(ed25519_generate(), "an Ed25519 key (is libsodium installed?)");
  KdbSigner signer{pair.public_key, [secret = pair.secret_key](std::span<const std::uint8_t> m) {
                     return ed25519_sign(m, secret);
                   }};
  kdb("signed-two.kdb", {{key_of(plain), plain}, {key_of(packed), packed}}, &signer);
  // User-tier databases (fuzz_user_log's input: the hint's length, the
  // hint, the log): empty, and three entries with one removed.
  for (int count : {0, 3}) {
    const std::string folder = temp.path() + "/user" + std::to_string(count);
    {
      struct Quiet final : TierEvents {
        void on_corrupt(std::string_view, const std::string&, const Status&) override {}
      } events;
      const Logger log(LogLevel::kQuiet, nullptr);
      auto tier = make_user_tier({folder, /*sync=*/false}, Env::posix(), log, events);
      const std::vector<std::uint8_t>* encoded[] = {&plain, &packed, &empty};
      for (int i = 0; i < count; ++i) {
        auto entry = must(decode_entry(ByteBuffer::copy_of(*encoded[i])), "decode");
        if (Status s = tier->put("db", entry, *encoded[i]); !s.is_ok()) {
          std::fprintf(stderr, "put: %s\n", s.to_string().c_str());
          return 1;
        }
      }
      if (count > 1) (void)tier->remove("db", key_of(packed));
      if (count == 0) {
        // A log with no entry: made by a put and a removal of it.
        auto entry = must(decode_entry(ByteBuffer::copy_of(plain)), "decode");
        (void)tier->put("db", entry, plain);
        (void)tier->remove("db", entry.key);
      }
    }
    const std::string log = read_all(folder + "/db.ukdb");
    const std::string hint = read_all(folder + "/db.ukdx");
    std::string seed(4, '\0');
    for (int i = 0; i < 4; ++i) seed[i] = static_cast<char>((hint.size() >> (8 * i)) & 0xFF);
    write(root / "fuzz_user_log" / ("seed-" + std::to_string(count) + "-entries"),
          seed + hint + log);
  }

  // Configuration: variables, home, options, and values for every parser.
  const std::filesystem::path config = root / "fuzz_config";
  write(config / "seed-env",
        "KCACHE_CUSTOM_CACHE_DIR=~/kernels\0KCACHE_DISABLE_CACHE=no\0KCACHE_LOG_LEVEL=debug\0"
        "KCACHE_MEMORY_CACHE_SIZE=128M\0KCACHE_COMPRESSION=zstd\0KCACHE_LOCK_TIMEOUT=90s\0"
        "HOME=/home/user"s);
  write(config / "seed-malformed",
        "KCACHE_DISABLE_CACHE=maybe\0KCACHE_MEMORY_CACHE_SIZE=12Q\0KCACHE_LOG_LEVEL=loud\0"
        "KCACHE_COMPRESSION=lz4\0KCACHE_LOCK_TIMEOUT=soon\0XDG_CACHE_HOME=/xdg\0HOME=/h"s);
  write(config / "seed-no-home",
        "KCACHE_SYSTEM_DB_PATH=/opt/kcache/db/\0KCACHE_DISABLE_CACHE= OFF \0"
        "KCACHE_MEMORY_CACHE_SIZE=1.5GiB"s);
  write(config / "seed-options",
        "option.cache_dir=/var/cache/k\0option.disable_cache=1\0KCACHE_DISABLE_CACHE=0\0"
        "option.log_level=warn\0option.memory_cache_size=0\0option.compression=none\0"
        "option.system_db_path=~/db\0option.read_environment=false\0HOME=/root"s);
  write(config / "seed-values",
        "gfx90a_110:xnack-:sramecc+\0sm_90_132\0sm_90\0gfx906_60\0"
        "-DBLOCK=128 -I include -U NDEBUG '-DNAME=a b' \"-DQ=\\\"x\\\"\" -O3 --include-path "
        "/opt/inc\0"
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\0"
        "1048576\0 2GiB \0"
        "64k\0on\0Quiet\0"s);

  // Key material and include scanning.
  const std::filesystem::path key = root / "fuzz_key_material";
  write(key / "seed-key-text", material);
  write(key / "seed-metadata", encode_fields(lowered));
  write(key / "seed-scan",
        "#include \"common.h\"\n  #  include <vec.h>\n#include MACRO\n#include_next <x.h>\n"
        "kernel void f() {}\n\0common.h\n#include \"vec.h\"\n#define N 4\n\0"
        "vec.h\n#include \"common.h\"\ntypedef float4 vec;\n"s);
  // Include graphs: fuzz_include_graph reads its input as a stream of
  // choices, so any bytes make a graph; these make larger ones than the
  // short inputs libFuzzer starts from. Fixed bytes (mt19937 is the same
  // everywhere), so the seeds do not change when regenerated.
  std::mt19937 bytes(20261130);
  for (int seed = 0; seed < 8; ++seed) {
    std::string choices(160, '\0');
    for (char& choice : choices) choice = static_cast<char>(bytes() & 0xFF);
    write(root / "fuzz_include_graph" / ("seed-graph-" + std::to_string(seed)), choices);
  }
  std::printf("corpus written to %s\n", root.c_str());
  return 0;
}
