// One AI SDK call against a Horde, printed as one line of JSON for tests/e2e/agents/test_ai_sdk.py.
//
//   node ai_sdk.mjs '{"provider": "openai", "mode": "text", "baseURL": "http://HOST:PORT/v1",
//                     "apiKey": "KEY", "model": "MODEL", "prompt": "...", "directory": "/path"}'
//
// provider: openai (Responses), openai-chat (`.chat`, chat completions), anthropic (Messages),
//           openai-compatible (chat completions); only the documented settings: baseURL, apiKey, model.
// mode: text (generateText), stream (streamText), tools (generateText with a tool that lists `directory`,
//       stopWhen: stepCountIs(3)).
import { readdirSync } from "node:fs";

import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

const options = JSON.parse(process.argv[2]);
const settings = { baseURL: options.baseURL, apiKey: options.apiKey };

function languageModel() {
  switch (options.provider) {
    case "openai":
      return createOpenAI(settings)(options.model);
    case "openai-chat":
      return createOpenAI(settings).chat(options.model);
    case "anthropic":
      return createAnthropic(settings)(options.model);
    case "openai-compatible":
      return createOpenAICompatible({ name: "horde", ...settings })(options.model);
    default:
      throw new Error(`unknown provider ${options.provider}`);
  }
}

const listFiles = tool({
  description: "List the files of the working directory",
  inputSchema: z.object({}),
  execute: async () => readdirSync(options.directory).sort().join("\n"),
});

async function run() {
  const model = languageModel();
  if (options.mode === "text") {
    const result = await generateText({ model, prompt: options.prompt, maxRetries: 0 });
    return { text: result.text, finishReason: result.finishReason, usage: result.usage };
  }
  if (options.mode === "stream") {
    let streamError = null;
    const result = streamText({
      model,
      prompt: options.prompt,
      maxRetries: 0,
      onError: ({ error }) => {
        streamError = error;
      },
    });
    const chunks = [];
    for await (const chunk of result.textStream) {
      chunks.push(chunk);
    }
    if (streamError) {
      throw streamError;
    }
    return { text: chunks.join(""), chunks: chunks.length, finishReason: await result.finishReason };
  }
  if (options.mode === "tools") {
    const result = await generateText({
      model,
      prompt: options.prompt,
      tools: { list_files: listFiles },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    return {
      text: result.text,
      finishReason: result.finishReason,
      steps: result.steps.map((step) => ({
        finishReason: step.finishReason,
        toolCalls: step.toolCalls.map((call) => call.toolName),
      })),
    };
  }
  throw new Error(`unknown mode ${options.mode}`);
}

try {
  console.log(JSON.stringify({ ok: true, ...(await run()) }));
} catch (error) {
  const cause = error?.lastError ?? error;
  console.log(
    JSON.stringify({
      ok: false,
      error: String(cause?.message ?? cause),
      statusCode: cause?.statusCode ?? null,
      responseBody: cause?.responseBody ?? null,
    }),
  );
  process.exitCode = 1;
}
