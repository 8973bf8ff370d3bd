// Every input file is opened here: only a regular file is read (a FIFO would block the run,
// /dev/zero never ends, a directory reads as nothing), and a refusal is an InputError naming
// the path and what is there instead, the same words for every reader.
#pragma once
#include <string>

namespace lpu {

// What is at `path` when it is not a readable regular file ("no such file", "it is a
// directory", "it is a FIFO, not a regular file", "Permission denied"); "" when it can be read.
// `directory_ok`: for inputs that may be a file or a directory (a report's inputs).
std::string input_path_problem(const std::string& path, bool directory_ok = false);

// "a directory", "a FIFO", "a character device", ... for what is at `path` when it is there
// and not a regular file; "" otherwise.
std::string file_type_of(const std::string& path);

// For readers that look a name up when it is not a file: "it is a directory", "it is a FIFO,
// not a regular file", ... when something other than a regular file is at `path`; else "".
std::string not_a_regular_file(const std::string& path);

// The file's bytes. `what` opens the message ("graph file" -> "graph file PATH: cannot open:
// it is a directory"); empty: the message starts with the path.
std::string read_input_file(const std::string& path, const std::string& what = "");

// read_input_file() for a text format: binary data (a NUL byte, which no text format here
// holds) is refused as "PATH: binary data (a NUL byte on line L), expected EXPECTED" before a
// parser quotes it (a NUL cut its message short).
std::string read_text_input_file(const std::string& path, const std::string& what, const std::string& expected);

// What a file's bytes look like, for "expected X, found Y" when they are not what its name
// promises: "an empty file", "binary data", "a JSON object", "a JSON list", "a graph in the
// text format", "text starting 'abc'".
std::string describe_contents(const std::string& bytes);

}  // namespace lpu
