"""A real model served with Ollama's HTTP API: llama.cpp (node-llama-cpp) on one thread."""
