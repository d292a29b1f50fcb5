// llama.cpp's own JSON-schema-to-GBNF converter, the one Ollama calls for a `format`
// schema, as a command: the schema on stdin, the grammar on stdout. A schema it cannot
// convert prints the converter's message on stderr and exits 1.
//
// Built by testing/downloads.py against the headers of the llama.cpp release inside the
// node-llama-cpp package and linked to that package's prebuilt libllama-common.so, so the
// converter is the very code of the binaries that run the model.

#include "json-schema-to-grammar.h"
#include "json.h"

#include <iostream>
#include <iterator>
#include <string>

int main() {
    std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    try {
        std::cout << json_schema_to_grammar(common_json::parse(text));
    } catch (const std::exception & error) {
        std::cerr << error.what() << std::endl;
        return 1;
    }
    return 0;
}
