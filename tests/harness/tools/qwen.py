"""stub"""
from tests.harness.tools.gemini import GeminiCli
class QwenCode(GeminiCli):
    name = "qwen"
