// Serving requests (workbench/serve): trace files in every accepted dialect, every bad-input
// case with its file, line and column in the message, and the generator's determinism and
// distributions. The shipped traces (workloads/traces/) must equal what the generator makes of
// their specs; LPU_REGEN_TRACES=1 rewrites them (scripts/make_serve_traces.sh).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "serve/generator.h"
#include "serve/shipped_traces.h"
#include "serve/trace_reader.h"
#include "support/error.h"

using namespace lpu;
using namespace lpu::serve;
using ::testing::HasSubstr;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("lpu_serve_" + std::to_string(getpid()) + "_" + name)).string();
}

std::string write_file(const std::string& name, const std::string& text) {
  std::string p = temp_path(name);
  std::ofstream(p) << text;
  return p;
}

// The InputError message of reading `text` as a file named `name`.
std::string error_of(const std::string& name, const std::string& text) {
  std::string p = write_file(name, text);
  try {
    read_trace(p);
  } catch (const InputError& e) {
    std::filesystem::remove(p);
    return e.what();
  }
  std::filesystem::remove(p);
  ADD_FAILURE() << "no error for " << text;
  return "";
}

}  // namespace

TEST(ServeTrace, ReadsOurCsvWithIds) {
  std::string p = write_file("ours.csv", "arrival_s,prompt_tokens,output_tokens,id\n0.5,10,3,7\n0.5,20,1,8\n\n");
  RequestList r = read_trace(p);
  std::filesystem::remove(p);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].id, 7);
  EXPECT_DOUBLE_EQ(r[0].arrival_s, 0.5);
  EXPECT_EQ(r[1].prompt_tokens, 20);
  EXPECT_EQ(r[1].output_tokens, 1);
}

TEST(ServeTrace, ReadsVidurAndSplitwiseHeaders) {
  RequestList v = parse_trace_csv("arrived_at,num_prefill_tokens,num_decode_tokens\n1.0,100.0,5\n2,50,6\n", "v.csv");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].prompt_tokens, 100);  // pandas writes whole numbers as 100.0
  EXPECT_EQ(v[1].id, 1);               // no id column: the row index
  RequestList s = parse_trace_csv(
      "request_id,request_type,application_id,arrival_timestamp,batch_size,prompt_size,token_size\n"
      "3,2,0,0.25,1,1500,13\n",
      "s.csv");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].id, 3);
  EXPECT_EQ(s[0].prompt_tokens, 1500);
  EXPECT_EQ(s[0].output_tokens, 13);
}

TEST(ServeTrace, ReadsJsonLines) {
  std::string p = write_file("t.jsonl",
                             "{\"arrival_s\": 0, \"prompt_tokens\": 4, \"output_tokens\": 2}\n\n"
                             "{\"arrived_at\": 1.5, \"num_prefill_tokens\": 8, \"num_decode_tokens\": 3}\n");
  RequestList r = read_trace(p);
  std::filesystem::remove(p);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].prompt_tokens, 8);
  EXPECT_DOUBLE_EQ(r[1].arrival_s, 1.5);
}

TEST(ServeTrace, CsvBadValuesNameFileLineAndColumn) {
  const std::string h = "arrival_s,prompt_tokens,output_tokens\n";
  struct Case {
    std::string body, expect;
  } cases[] = {
      {"-1,10,10\n", ":2: column 1 (arrival_s): expected an arrival time >= 0"},
      {"nan,10,10\n", ":2: column 1 (arrival_s): expected an arrival time >= 0 seconds, got nan"},
      {"inf,10,10\n", ":2: column 1 (arrival_s)"},
      {"2,10,10\n1,10,10\n", ":3: column 1 (arrival_s): arrival time 1 is before the previous"},
      {"0,0,10\n", ":2: column 2 (prompt_tokens): expected a whole number of tokens >= 1, got 0"},
      {"0,-5,10\n", ":2: column 2 (prompt_tokens): expected a whole number of tokens >= 1, got -5"},
      {"0,10,2.5\n", ":2: column 3 (output_tokens): expected a whole number of tokens >= 1, got 2.5"},
      {"0,10,ten\n", ":2: column 3 (output_tokens): expected a number, got 'ten'"},
      {"0,10\n", ":2: expected 3 comma-separated values (as the header), got 2"},
      {"0,10,10,4\n", ":2: expected 3 comma-separated values"},
  };
  for (const Case& c : cases) {
    std::string msg = error_of("bad.csv", h + c.body);
    EXPECT_THAT(msg, HasSubstr("bad.csv" + c.expect)) << c.body;
  }
}

TEST(ServeTrace, CsvBadHeaders) {
  EXPECT_THAT(error_of("h.csv", "arrival_s,prompt_tokens\n0,1\n"),
              HasSubstr("h.csv:1: the header has no output_tokens"));
  EXPECT_THAT(error_of("h.csv", "arrival_s,prompt_tokens,output_tokens,colour\n0,1,1,red\n"),
              HasSubstr("h.csv:1: column 4 ('colour'): unknown column 'colour'; expected arrival_s"));
  EXPECT_THAT(error_of("h.csv", "arrival_s,arrived_at,prompt_tokens,output_tokens\n"),
              HasSubstr("h.csv:1: column 2 ('arrived_at'): the same field is named twice"));
  EXPECT_THAT(error_of("h.csv", "arrival_s,prompt_tokens,output_tokens,id\n0,1,1,4\n0,1,1,4\n"),
              HasSubstr("h.csv:3: request id 4 appears twice"));
}

TEST(ServeTrace, EmptyFiles) {
  EXPECT_THAT(error_of("e.csv", ""), HasSubstr("e.csv: empty trace"));
  EXPECT_THAT(error_of("e.csv", "\n  \n"), HasSubstr("e.csv: empty trace"));
  EXPECT_THAT(error_of("e.csv", "arrival_s,prompt_tokens,output_tokens\n"),
              HasSubstr("e.csv: the trace has a header but no requests"));
  EXPECT_THAT(error_of("e.jsonl", ""), HasSubstr("e.jsonl: empty trace"));
}

TEST(ServeTrace, JsonlBadLinesNameLineAndKey) {
  EXPECT_THAT(error_of("j.jsonl", "{\"arrival_s\":0,\"prompt_tokens\":1,\"output_tokens\":1}\n[1]\n"),
              HasSubstr("j.jsonl:2: expected a JSON object per line"));
  EXPECT_THAT(error_of("j.jsonl", "{\"arrival_s\":0,\"prompt_tokens\":1}\n"),
              HasSubstr("j.jsonl:1: the object has no output_tokens"));
  EXPECT_THAT(error_of("j.jsonl", "{\"arrival_s\":0,\"prompt_tokens\":1,\"output_tokens\":1,\"x\":2}\n"),
              HasSubstr("j.jsonl:1: key 'x': unknown column 'x'"));
  EXPECT_THAT(error_of("j.jsonl", "{\"arrival_s\":-2,\"prompt_tokens\":1,\"output_tokens\":1}\n"),
              HasSubstr("j.jsonl:1: key 'arrival_s': expected an arrival time >= 0"));
  EXPECT_THAT(error_of("j.jsonl", "{\"arrival_s\":0,\"prompt_tokens\":\"7\",\"output_tokens\":1}\n"),
              HasSubstr("j.jsonl:1: key 'prompt_tokens': expected a number, got \"7\""));
  EXPECT_THAT(error_of("j.jsonl", "{\"arrival_s\":0,\"prompt_tokens\":1.5,\"output_tokens\":1}\n"),
              HasSubstr("j.jsonl:1: key 'prompt_tokens': expected a whole number of tokens >= 1, got 1.5"));
  EXPECT_THAT(error_of("j.jsonl",
                       "{\"arrival_s\":3,\"prompt_tokens\":1,\"output_tokens\":1}\n"
                       "{\"arrival_s\":1,\"prompt_tokens\":1,\"output_tokens\":1}\n"),
              HasSubstr("j.jsonl:2: key 'arrival_s': arrival time 1 is before"));
  EXPECT_THAT(error_of("j.jsonl", "{\"arrival_s\":0,\n"), HasSubstr("j.jsonl:1"));
}

TEST(ServeTrace, PathsThatAreNotFiles) {
  std::string dir = temp_path("dir");
  std::filesystem::create_directory(dir);
  try {
    read_trace(dir);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("trace file " + dir + ": cannot open: it is a directory"));
  }
  std::filesystem::remove(dir);
  std::string fifo = temp_path("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  try {
    read_trace(fifo);  // must not block waiting for a writer
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr(fifo + ": cannot open: it is a FIFO, not a regular file"));
  }
  std::filesystem::remove(fifo);
  EXPECT_THROW(read_trace(temp_path("missing.csv")), InputError);
  // Binary data is refused as such before the CSV reader quotes it (a NUL cut its message short).
  std::string binary = temp_path("binary.csv");
  std::ofstream(binary, std::ios::binary) << std::string("arrival_s,prompt_tokens,output_tokens\n0,1\0,2\n", 45);
  try {
    read_trace(binary);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr(binary + ": binary data (a NUL byte on line 2), expected a request trace"));
  }
  std::filesystem::remove(binary);
}

TEST(ServeGenerator, SameSeedSameTraceOtherSeedAnother) {
  GeneratorSpec g;
  g.requests = 200;
  g.seed = 7;
  g.arrival = parse_arrival_spec("gamma:2", 3.0, "arrivals");
  g.prompt = parse_length_spec("zipf:1.1:16:4096", "prompt");
  g.output = parse_length_spec("uniform:1:300", "output");
  std::ostringstream a, b, c;
  write_trace_csv(generate_requests(g), a);
  write_trace_csv(generate_requests(g), b);
  g.seed = 8;
  write_trace_csv(generate_requests(g), c);
  EXPECT_EQ(a.str(), b.str());
  EXPECT_NE(a.str(), c.str());
}

// Frozen draws: a change of sampler, engine or seeding shows here (and on another standard
// library, where std:: distributions would differ).
TEST(ServeGenerator, FrozenDraws) {
  GeneratorSpec g;
  g.requests = 3;
  g.seed = 1;
  g.arrival.rate = 2;
  g.prompt = parse_length_spec("uniform:1:1000", "prompt");
  g.output = parse_length_spec("lognormal:100:1:1:5000", "output");
  std::ostringstream os;
  write_trace_csv(generate_requests(g), os);
  EXPECT_EQ(os.str(),
            "arrival_s,prompt_tokens,output_tokens,id\n0.948657,855,236,0\n1.139451,808,171,1\n1.646774,284,144,2\n");
}

TEST(ServeGenerator, PoissonAndGammaRatesAndBurstiness) {
  for (double cv : {1.0, 3.0, 0.5}) {
    GeneratorSpec g;
    g.requests = 40000;
    g.arrival = ArrivalSpec{cv == 1.0 ? ArrivalSpec::Kind::Poisson : ArrivalSpec::Kind::Gamma, 5.0, cv};
    RequestList r = generate_requests(g);
    double prev = 0, sum = 0, sq = 0;
    for (const Request& q : r) {
      double gap = q.arrival_s - prev;
      prev = q.arrival_s, sum += gap, sq += gap * gap;
    }
    double n = static_cast<double>(r.size()), mean = sum / n;
    double sd = std::sqrt(sq / n - mean * mean);
    EXPECT_NEAR(mean, 0.2, 0.2 * 0.05) << "cv " << cv;
    EXPECT_NEAR(sd / mean, cv, cv * 0.08) << "cv " << cv;
  }
}

TEST(ServeGenerator, LengthDistributions) {
  GeneratorSpec g;
  g.requests = 20000;
  g.prompt = parse_length_spec("uniform:10:20", "prompt");
  g.output = parse_length_spec("zipf:1.2:1:1000", "output");
  RequestList r = generate_requests(g);
  int64_t ones = 0, twos = 0, seen_lo = 0, seen_hi = 0;
  for (const Request& q : r) {
    EXPECT_GE(q.prompt_tokens, 10);
    EXPECT_LE(q.prompt_tokens, 20);
    seen_lo += q.prompt_tokens == 10, seen_hi += q.prompt_tokens == 20;
    EXPECT_GE(q.output_tokens, 1);
    EXPECT_LE(q.output_tokens, 1000);
    ones += q.output_tokens == 1, twos += q.output_tokens == 2;
  }
  EXPECT_GT(seen_lo, 0);
  EXPECT_GT(seen_hi, 0);
  EXPECT_NEAR(static_cast<double>(ones) / twos, std::pow(2.0, 1.2), 0.2);  // Zipf: P(1)/P(2) = 2^s
  g.prompt = parse_length_spec("lognormal:500:0.8:1:100000", "prompt");
  g.output = parse_length_spec("7", "output");
  std::vector<int64_t> p;
  for (const Request& q : generate_requests(g)) {
    p.push_back(q.prompt_tokens);
    EXPECT_EQ(q.output_tokens, 7);
  }
  std::nth_element(p.begin(), p.begin() + p.size() / 2, p.end());
  EXPECT_NEAR(static_cast<double>(p[p.size() / 2]), 500, 20);
}

TEST(ServeGenerator, EmpiricalDrawsOnlyTheFilesValues) {
  std::string f = write_file("emp.csv", "arrival_s,prompt_tokens,output_tokens\n0,100,5\n1,300,6\n2,300,7\n");
  GeneratorSpec g;
  g.requests = 3000;
  g.prompt = parse_length_spec("empirical:" + f + ":prompt", "prompt");
  g.output = parse_length_spec("empirical:" + f + ":output", "output");
  std::filesystem::remove(f);
  int64_t hundred = 0;
  for (const Request& q : generate_requests(g)) {
    EXPECT_TRUE(q.prompt_tokens == 100 || q.prompt_tokens == 300);
    EXPECT_TRUE(q.output_tokens >= 5 && q.output_tokens <= 7);
    hundred += q.prompt_tokens == 100;
  }
  EXPECT_NEAR(hundred / 3000.0, 1 / 3.0, 0.04);
  // Vidur's length files have no arrivals (and two derived columns): fine for lengths only.
  std::string v = write_file("lengths.csv",
                             "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n7,3,10,2.33\n9,1,10,9\n");
  EXPECT_EQ(trace_lengths(v, true), (std::vector<int64_t>{7, 9}));
  EXPECT_EQ(trace_lengths(v, false), (std::vector<int64_t>{3, 1}));
  EXPECT_THROW(read_trace(v), InputError);  // ... but not as a trace
  std::filesystem::remove(v);
}

TEST(ServeGenerator, BadSpecs) {
  EXPECT_THROW(parse_length_spec("uniform:5", "prompt"), InputError);
  EXPECT_THROW(parse_length_spec("zipf:x:1:5", "prompt"), InputError);
  EXPECT_THROW(parse_length_spec("fixed:2.5", "prompt"), InputError);
  EXPECT_THROW(parse_arrival_spec("weibull", 1, "arrivals"), InputError);
  GeneratorSpec g;
  g.arrival.rate = 0;
  EXPECT_THROW(generate_requests(g), InputError);
  g.arrival.rate = -1;
  EXPECT_THROW(generate_requests(g), InputError);
  g.arrival.rate = 1;
  g.prompt = parse_length_spec("uniform:9:3", "prompt");
  try {
    generate_requests(g);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("prompt length: expected 1 <= min <= max, got 9..3"));
  }
}

// The shipped traces are what their specs make (and read back as valid traces).
TEST(ServeGenerator, ShippedTracesMatchTheirSpecs) {
  bool regen = std::getenv("LPU_REGEN_TRACES") != nullptr;
  for (const ShippedTrace& t : shipped_traces()) {
    std::ostringstream made;
    write_trace_csv(generate_requests(t.spec), made);
    std::string path = std::string(LPU_SOURCE_DIR) + "/" + t.file;
    if (regen) std::ofstream(path) << made.str();
    std::ifstream in(path);
    std::stringstream disk;
    disk << in.rdbuf();
    EXPECT_EQ(disk.str(), made.str()) << t.file << ": run scripts/make_serve_traces.sh after changing its spec";
    EXPECT_EQ(read_trace(path).size(), static_cast<size_t>(t.spec.requests));
  }
}
