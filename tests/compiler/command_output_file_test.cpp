// read_compiler_output and read_compiler_log: what a compiler leaves at
// {out} is read without blocking, following a link or reading without end.
#include "compiler/command/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;
using Clock = std::chrono::steady_clock;

std::string message_of(const Result<std::vector<std::uint8_t>>& result) {
  return result ? std::string("(read ") + std::to_string(result->size()) + " bytes)"
                : result.status().to_string();
}

// Each refusal must come back at once, not after some wait: a generous
// bound that a blocking read or a read of /dev/zero would never meet.
constexpr auto kPrompt = std::chrono::seconds(5);

TEST(CommandOutputFileTest, ReadsARegularFile) {
  TempFolder dir;
  testing::write_file(dir / "out.bin", std::string("\x7f"
                                                   "ELF\0binary",
                                                   10));
  auto bytes = read_compiler_output(dir / "out.bin");
  ASSERT_TRUE(bytes.is_ok()) << message_of(bytes);
  EXPECT_EQ(std::string(bytes->begin(), bytes->end()), std::string("\x7f"
                                                                   "ELF\0binary",
                                                                   10));
}

TEST(CommandOutputFileTest, ReadsAFileOfExactlyTheLimit) {
  TempFolder dir;
  testing::write_file(dir / "out.bin", std::string(4096, 'k'));
  auto bytes = read_compiler_output(dir / "out.bin", 4096);
  ASSERT_TRUE(bytes.is_ok()) << message_of(bytes);
  EXPECT_EQ(bytes->size(), 4096u);
}

TEST(CommandOutputFileTest, NoFileIsACompileError) {
  TempFolder dir;
  auto bytes = read_compiler_output(dir / "out.bin");
  ASSERT_FALSE(bytes.is_ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kCompileError);
  EXPECT_EQ(bytes.status().message(), "wrote no output file ({out})");
}

TEST(CommandOutputFileTest, EmptyFileIsACompileError) {
  TempFolder dir;
  testing::write_file(dir / "out.bin", "");
  auto bytes = read_compiler_output(dir / "out.bin");
  ASSERT_FALSE(bytes.is_ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kCompileError);
  EXPECT_EQ(bytes.status().message(), "wrote an empty output file ({out})");
}

// A FIFO with no writer: a plain open for reading waits for one for ever.
TEST(CommandOutputFileTest, FifoWithNoWriterIsRefusedAtOnce) {
  TempFolder dir;
  ASSERT_EQ(::mkfifo((dir / "out.bin").c_str(), 0600), 0);
  const auto start = Clock::now();
  auto bytes = read_compiler_output(dir / "out.bin");
  EXPECT_LT(Clock::now() - start, kPrompt);
  ASSERT_FALSE(bytes.is_ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kCompileError);
  EXPECT_EQ(bytes.status().message(), "left a FIFO at {out}, not a regular file");
}

// A link to /dev/zero would read zeros until memory runs out.
TEST(CommandOutputFileTest, SymlinkToDevZeroIsRefusedAtOnce) {
  TempFolder dir;
  ASSERT_EQ(::symlink("/dev/zero", (dir / "out.bin").c_str()), 0);
  const auto start = Clock::now();
  auto bytes = read_compiler_output(dir / "out.bin");
  EXPECT_LT(Clock::now() - start, kPrompt);
  ASSERT_FALSE(bytes.is_ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kCompileError);
  EXPECT_EQ(bytes.status().message(),
            "left a symbolic link (to /dev/zero) at {out}, not a regular file");
}

// Even a link to a good regular file: what {out} names is the compiler's
// file, and a link may point anywhere this user can read.
TEST(CommandOutputFileTest, SymlinkToARegularFileIsRefused) {
  TempFolder dir;
  testing::write_file(dir / "secret", "not the compiler's");
  ASSERT_EQ(::symlink((dir / "secret").c_str(), (dir / "out.bin").c_str()), 0);
  auto bytes = read_compiler_output(dir / "out.bin");
  ASSERT_FALSE(bytes.is_ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kCompileError);
  EXPECT_NE(bytes.status().message().find("left a symbolic link (to "), std::string::npos)
      << bytes.status().message();
}

TEST(CommandOutputFileTest, FolderIsRefused) {
  TempFolder dir;
  std::filesystem::create_directory(dir / "out.bin");
  auto bytes = read_compiler_output(dir / "out.bin");
  ASSERT_FALSE(bytes.is_ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kCompileError);
  EXPECT_EQ(bytes.status().message(), "left a folder at {out}, not a regular file");
}

// A sparse file one byte over the default limit is refused from its size,
// without reading (and allocating) a gigabyte.
TEST(CommandOutputFileTest, TooLargeSparseFileIsRefusedWithoutReadingIt) {
  TempFolder dir;
  const std::string path = dir / "out.bin";
  { std::ofstream touch(path); }
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(kMaxCompilerOutputBytes + 1)), 0);
  const auto start = Clock::now();
  auto bytes = read_compiler_output(path);
  EXPECT_LT(Clock::now() - start, kPrompt);
  ASSERT_FALSE(bytes.is_ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kCompileError);
  EXPECT_EQ(bytes.status().message(),
            "wrote more than 1 GiB to {out} (the limit for a compiler's output)");
}

TEST(CommandOutputFileTest, OneByteOverASmallLimitIsRefused) {
  TempFolder dir;
  testing::write_file(dir / "out.bin", std::string(4097, 'k'));
  auto bytes = read_compiler_output(dir / "out.bin", 4096);
  ASSERT_FALSE(bytes.is_ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kCompileError);
  EXPECT_EQ(bytes.status().message(),
            "wrote more than 4096 bytes to {out} (the limit for a compiler's output)");
}

// The deadline is checked between reads of 8 MiB: a small file is read
// whatever the clock says, a large one not past the deadline.
TEST(CommandOutputFileTest, PastTheDeadlineIsATimeout) {
  TempFolder dir;
  testing::write_file(dir / "small.bin", "binary");
  auto small = read_compiler_output(dir / "small.bin", kMaxCompilerOutputBytes, Clock::now());
  ASSERT_TRUE(small.is_ok()) << message_of(small);
  EXPECT_EQ(small->size(), 6u);
  testing::write_file(dir / "large.bin", std::string(9u << 20, 'b'));
  auto large = read_compiler_output(dir / "large.bin", kMaxCompilerOutputBytes, Clock::now());
  ASSERT_FALSE(large.is_ok());
  EXPECT_EQ(large.status().code(), StatusCode::kTimeout);
  auto in_time = read_compiler_output(dir / "large.bin");
  ASSERT_TRUE(in_time.is_ok()) << message_of(in_time);
  EXPECT_EQ(in_time->size(), 9u << 20);
}

TEST(CommandOutputFileTest, LogIsReadAndBounded) {
  TempFolder dir;
  EXPECT_EQ(read_compiler_log(dir / "log.txt"), "");
  testing::write_file(dir / "log.txt", "warning: unused variable\n");
  EXPECT_EQ(read_compiler_log(dir / "log.txt"), "warning: unused variable\n");
  testing::write_file(dir / "log.txt", std::string(100, 'w'));
  EXPECT_EQ(read_compiler_log(dir / "log.txt", 100), std::string(100, 'w'));
  testing::write_file(dir / "log.txt", std::string(101, 'w'));
  EXPECT_EQ(read_compiler_log(dir / "log.txt", 100),
            std::string(100, 'w') + "\n[kcache: the log was cut at 100 bytes]\n");
}

TEST(CommandOutputFileTest, LogThatIsAFifoOrALinkIsNotRead) {
  TempFolder dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/dev/zero", (dir / "link").c_str()), 0);
  const auto start = Clock::now();
  EXPECT_EQ(read_compiler_log(dir / "fifo"),
            "[kcache: the compiler left a FIFO in place of its log, not a regular file]\n");
  EXPECT_EQ(read_compiler_log(dir / "link"),
            "[kcache: the compiler left a symbolic link (to /dev/zero) in place of its log, not a "
            "regular file]\n");
  EXPECT_LT(Clock::now() - start, kPrompt);
}

}  // namespace
}  // namespace kcache
