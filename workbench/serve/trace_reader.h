// Request traces from files: CSV with a header, or JSON Lines (one object per line). The column
// names of the anchors' traces read as ours, so their traces run unchanged:
//   ours           Vidur                SplitwiseSim
//   arrival_s      arrived_at           arrival_timestamp   (seconds)
//   prompt_tokens  num_prefill_tokens   prompt_size
//   output_tokens  num_decode_tokens    token_size
//   id (optional)  -                    request_id
// SplitwiseSim's other columns (request_type, application_id, batch_size) and Vidur's derived
// ones (num_total_tokens, pd_ratio) are read and ignored; any other column is an error, so a
// misspelt name is never silently dropped.
// Every error is an InputError "FILE:LINE: column N (NAME): expected ..., got '...'".
#pragma once
#include <string>

#include "serve/request.h"

namespace lpu::serve {

// CSV unless the name ends in .jsonl/.ndjson or the first non-blank character is '{'.
RequestList read_trace(const std::string& path);
// Lengths only, for empirical length distributions: the arrival column may be missing (as in
// Vidur's length files, e.g. its arXiv-summarisation stats); arrivals read as 0 then.
RequestList read_lengths(const std::string& path);

// The same, from text already in memory (`source` names it in messages).
RequestList parse_trace_csv(const std::string& text, const std::string& source, bool need_arrival = true);
RequestList parse_trace_jsonl(const std::string& text, const std::string& source, bool need_arrival = true);

}  // namespace lpu::serve
