#include "inputs/scan_records.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "fakes/temp_folder.h"
#include "inputs/file_digests.h"

namespace kcache {
namespace {

using testing::read_file;
using testing::TempFolder;
using testing::write_file;
namespace fs = std::filesystem;

// A record is an optimisation that must never answer for other inputs or
// for a disk that changed: anything it cannot vouch for is no record.
class ScanRecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(dir_ / "inc/a.h", "#define A 1\n");
    header_ = dir_ / "inc/a.h";
    absent_ = dir_ / "first/a.h";
    fs::create_directories(dir_ / "first");
    // A file changed within a timestamp tick makes a scan unreusable: these
    // are older than that before any scan is made of them.
    for (;;) {
      auto stamp = Env::posix().stamp(header_);
      if (!stamp || !changed_recently(*stamp)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    scan_.probes.push_back({absent_, std::nullopt});
    scan_.probes.push_back({header_, *Env::posix().stamp(header_)});
    scan_.files.push_back(Env::posix().stamp(header_)->id);
    inputs_.shape = "shape of the search";
    inputs_.texts = {source_};
  }

  std::unique_ptr<ScanRecords> records(bool trusted = true, std::size_t max = 4096) {
    return std::make_unique<ScanRecords>(
        dir_ / "scans", Env::posix(), [trusted] { return trusted; }, max);
  }
  // The one record file in the folder.
  std::string record_file() {
    std::string found;
    for (const auto& entry : fs::directory_iterator(dir_ / "scans")) {
      EXPECT_TRUE(found.empty()) << "more than one record";
      found = entry.path().string();
    }
    return found;
  }
  std::size_t record_count() {
    std::size_t count = 0;
    if (!fs::exists(dir_ / "scans")) return 0;
    for (const auto& entry : fs::directory_iterator(dir_ / "scans")) {
      count += entry.path().extension() == ".scan" ? 1 : 0;
    }
    return count;
  }

  TempFolder dir_;
  std::string header_;
  std::string absent_;
  std::string source_ = "#include \"a.h\"\nkernel body\n";
  IncludeScan scan_;
  ScanInputs inputs_;
  const std::string head_ = "kcache.key 3\nheader a.h inc/a.h sha256:00\n";
};

TEST_F(ScanRecordsTest, AKeptRecordIsFoundWhole) {
  records()->keep(inputs_, scan_, head_);
  auto found = records()->find(inputs_);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found->head, head_);
  ASSERT_EQ(found->scan->probes.size(), 2u);
  EXPECT_EQ(found->scan->probes[0].path, absent_);
  EXPECT_FALSE(found->scan->probes[0].stamp.has_value());
  EXPECT_EQ(found->scan->probes[1].path, header_);
  EXPECT_EQ(found->scan->probes[1].stamp, scan_.probes[1].stamp);
  ASSERT_EQ(found->scan->files.size(), 1u);
  EXPECT_EQ(found->scan->files[0], scan_.files[0]);
}

TEST_F(ScanRecordsTest, OtherInputsFindNone) {
  records()->keep(inputs_, scan_, head_);
  ScanInputs other = inputs_;
  const std::string other_source = source_ + " ";
  other.texts = {other_source};
  EXPECT_FALSE(records()->find(other).has_value());
  other = inputs_;
  other.shape += "x";
  EXPECT_FALSE(records()->find(other).has_value());
  other = inputs_;
  other.texts.push_back("");
  EXPECT_FALSE(records()->find(other).has_value());
}

TEST_F(ScanRecordsTest, ARecordUnderAnotherInputsNameIsNotTheirs) {
  // As a collision of the file names' hash would be: the inputs inside
  // are compared in full.
  records()->keep(inputs_, scan_, head_);
  const std::string kept = record_file();
  ScanInputs other = inputs_;
  const std::string other_source = "other";
  other.texts = {other_source};
  records()->keep(other, scan_, "other head\n");
  std::string other_file;
  for (const auto& entry : fs::directory_iterator(dir_ / "scans")) {
    if (entry.path().string() != kept) other_file = entry.path().string();
  }
  ASSERT_FALSE(other_file.empty());
  fs::copy_file(kept, other_file, fs::copy_options::overwrite_existing);
  EXPECT_FALSE(records()->find(other).has_value());
  EXPECT_TRUE(records()->find(inputs_).has_value());
}

TEST_F(ScanRecordsTest, AChangedDiskMakesTheRecordNone) {
  records()->keep(inputs_, scan_, head_);
  ASSERT_TRUE(records()->find(inputs_).has_value());
  write_file(header_, "#define A 2\n");  // same size, a new stamp
  EXPECT_FALSE(records()->find(inputs_).has_value());
  scan_.probes[1].stamp = *Env::posix().stamp(header_);
  records()->keep(inputs_, scan_, head_);
  ASSERT_TRUE(records()->find(inputs_).has_value());
  write_file(absent_, "#define A 3\n");  // a header that would now be found first
  EXPECT_FALSE(records()->find(inputs_).has_value());
}

TEST_F(ScanRecordsTest, EveryDamagedRecordIsNone) {
  records()->keep(inputs_, scan_, head_);
  const std::string file = record_file();
  const std::string intact = read_file(file);
  ASSERT_GT(intact.size(), 40u);
  for (std::size_t at = 0; at < intact.size(); ++at) {
    std::string damaged = intact;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x10);
    write_file(file, damaged);
    EXPECT_FALSE(records()->find(inputs_).has_value()) << "byte " << at << " flipped";
  }
  for (std::size_t size : {std::size_t{0}, std::size_t{7}, intact.size() / 2, intact.size() - 1}) {
    write_file(file, intact.substr(0, size));
    EXPECT_FALSE(records()->find(inputs_).has_value()) << "cut to " << size;
  }
  write_file(file, intact + "x");
  EXPECT_FALSE(records()->find(inputs_).has_value()) << "a byte more";
  write_file(file, intact);
  EXPECT_TRUE(records()->find(inputs_).has_value());
}

TEST_F(ScanRecordsTest, WhatCannotBeReusedIsNotKept) {
  IncludeScan unreusable = scan_;
  unreusable.reusable = false;
  records()->keep(inputs_, unreusable, head_);
  IncludeScan unkeyable = scan_;
  unkeyable.unkeyable = "a header that is not a regular file";
  records()->keep(inputs_, unkeyable, head_);
  IncludeScan nothing_on_disk;
  records()->keep(inputs_, nothing_on_disk, head_);
  EXPECT_EQ(record_count(), 0u);
  EXPECT_FALSE(records()->find(inputs_).has_value());
}

TEST_F(ScanRecordsTest, AnUntrustedFolderIsNeitherReadNorWritten) {
  records(/*trusted=*/false)->keep(inputs_, scan_, head_);
  EXPECT_EQ(record_count(), 0u);
  records()->keep(inputs_, scan_, head_);
  EXPECT_FALSE(records(/*trusted=*/false)->find(inputs_).has_value());
}

TEST_F(ScanRecordsTest, TheFolderKeepsAtMostItsLimit) {
  auto bounded = records(true, /*max=*/8);
  std::vector<std::string> sources;
  for (int i = 0; i < 30; ++i) sources.push_back("source " + std::to_string(i));
  for (const auto& source : sources) {
    ScanInputs inputs = inputs_;
    inputs.texts = {source};
    bounded->keep(inputs, scan_, head_);
    EXPECT_LE(record_count(), 8u);
  }
  // The newest is always kept.
  ScanInputs newest = inputs_;
  newest.texts = {sources.back()};
  EXPECT_TRUE(bounded->find(newest).has_value());
}

}  // namespace
}  // namespace kcache
