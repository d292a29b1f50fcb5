"""Adapters: the only modules that import ollama, lancedb and the ONNX runtime."""
