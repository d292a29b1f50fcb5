// @ts-check
// The model half of the real-model server (testing/llama/server.py is the HTTP half).
//
// One node-llama-cpp model at a time, on one CPU thread, with one context sequence that
// is kept between requests, so a prompt that starts like the previous one evaluates only
// what differs (node-llama-cpp's LlamaCompletion reuses the evaluated prefix).
//
// Protocol: one JSON object per line. Requests on stdin: {"op", "id", ...}; events on
// stdout: {"id", ...}. Requests run one after another in arrival order, except "cancel",
// which aborts the generation of the given id at once. Diagnostics go to stderr.
//
//   {"op":"info","id":1,"path":P}                 -> {"id":1,"info":{...GGUF metadata}}
//   {"op":"load","id":2,"path":P,"num_ctx":N}      -> {"id":2,"loaded":true,"load_ns":T}
//   {"op":"unload","id":2}                         -> {"id":2,"unloaded":true}
//   {"op":"generate","id":3,"path":P,"num_ctx":N,
//    "messages":[{"role","content"}] | "prompt":S,
//    "grammar":null | "json" | {"gbnf":S},
//    "options":{temperature, top_k, top_p, min_p, seed, num_predict, stop,
//               repeat_penalty, repeat_last_n, presence_penalty, frequency_penalty}}
//        -> {"id":3,"text":S}... then {"id":3,"done":true,"done_reason":"stop"|"length",
//           "prompt_tokens","cached_tokens","eval_count","load_ns","prompt_ns","eval_ns"}
//   {"op":"cancel","id":3}                         -> the generation ends with {"id":3,"canceled":true}
// A failed request answers {"id", "error": message}.

import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const modulesDir = process.argv[2];
if (!modulesDir) {
    process.stderr.write("usage: node worker.mjs NODE_MODULES_DIR\n");
    process.exit(2);
}
/** @type {typeof import("node-llama-cpp")} */
const llamaCpp = await import(pathToFileURL(join(modulesDir, "node-llama-cpp", "dist", "index.js")).href);
const { getLlama, JinjaTemplateChatWrapper, LlamaCompletion, LlamaText, readGgufFileInfo } = llamaCpp;

const llama = await getLlama({
    gpu: false,
    build: "never",
    maxThreads: 1,
    progressLogs: false,
    logLevel: llamaCpp.LlamaLogLevel.error,
});

/**
 * The loaded model, its context and the sequence whose evaluated tokens later requests reuse.
 * @type {null | {path: string, numCtx: number, model: any, context: any, sequence: any, completion: any, chat: any}}
 */
let loaded = null;
/** @type {Map<string, any>} GBNF text -> LlamaGrammar, for the loaded model's lifetime */
const grammars = new Map();
/** @type {Map<number, AbortController>} */
const running = new Map();
/** @type {Set<number>} ids canceled before their generation started */
const canceledEarly = new Set();

/** @param {object} event */
function emit(event) {
    process.stdout.write(JSON.stringify(event) + "\n");
}

/**
 * @param {string} path
 * @param {number} numCtx
 * @returns {Promise<number>} nanoseconds spent loading (0 when already loaded)
 */
async function ensureLoaded(path, numCtx) {
    if (loaded && loaded.path === path && loaded.numCtx === numCtx) return 0;
    const start = process.hrtime.bigint();
    await unload();
    const model = await llama.loadModel({ modelPath: path });
    const context = await model.createContext({ contextSize: numCtx, threads: 1, sequences: 1 });
    const sequence = context.getSequence();
    const completion = new LlamaCompletion({ contextSequence: sequence });
    const template = model.fileInfo.metadata.tokenizer?.chat_template;
    const chat = template
        ? new JinjaTemplateChatWrapper({
              template,
              reasoning: null,
              joinAdjacentMessagesOfTheSameType: false,
              trimLeadingWhitespaceInResponses: false,
          })
        : null;
    loaded = { path, numCtx, model, context, sequence, completion, chat };
    return Number(process.hrtime.bigint() - start);
}

async function unload() {
    grammars.clear();
    if (loaded) {
        const { context, model } = loaded;
        loaded = null;
        await context.dispose();
        await model.dispose();
    }
}

/**
 * The chat history node-llama-cpp's chat wrappers take, ending with the turn to generate.
 * @param {{role: string, content: string}[]} messages
 */
function chatHistory(messages) {
    /** @type {any[]} */
    const history = messages.map(({ role, content }) => {
        if (role === "system") return { type: "system", text: content };
        if (role === "user") return { type: "user", text: content };
        if (role === "assistant") return { type: "model", response: [content] };
        throw new Error(`unsupported message role ${JSON.stringify(role)}`);
    });
    history.push({ type: "model", response: [] });
    return history;
}

/**
 * Tokens of the prompt for ``messages`` rendered by the GGUF's chat template, with the
 * oldest messages after the system ones left out while it does not fit (as Ollama does).
 * @param {{role: string, content: string}[]} messages
 */
function chatPrompt(messages) {
    if (!loaded) throw new Error("no model loaded");
    if (!loaded.chat) throw new Error("the model's GGUF has no chat template");
    let kept = messages;
    while (true) {
        const state = loaded.chat.generateContextState({ chatHistory: chatHistory(kept) });
        const tokens = state.contextText.tokenize(loaded.model.tokenizer);
        const droppable = kept.findIndex((m) => m.role !== "system");
        const last = kept.length - 1;
        if (tokens.length < loaded.numCtx || droppable < 0 || droppable >= last) {
            return { tokens, stops: state.stopGenerationTriggers };
        }
        kept = kept.filter((_, i) => i !== droppable);
    }
}

/** @param {any} grammar */
async function resolveGrammar(grammar) {
    if (grammar == null) return undefined;
    if (grammar === "json") return await llama.getGrammarFor("json");
    const text = grammar.gbnf;
    let found = grammars.get(text);
    if (!found) {
        found = await llama.createGrammar({ grammar: text });
        grammars.set(text, found);
    }
    return found;
}

/** @param {any} request */
async function generate(request) {
    const { id, path, num_ctx: numCtx, options } = request;
    if (canceledEarly.delete(id)) return emit({ id, canceled: true });
    const controller = new AbortController();
    running.set(id, controller);
    try {
        const loadNs = await ensureLoaded(path, numCtx);
        if (!loaded) throw new Error("no model loaded");
        const { model, sequence, completion } = loaded;
        const { tokens, stops } = request.messages
            ? chatPrompt(request.messages)
            : { tokens: model.tokenize(request.prompt, true), stops: [] };
        const grammar = await resolveGrammar(request.grammar);
        const cached = Math.min(sequence.compareContextTokens(tokens).firstDifferentIndex, tokens.length - 1);
        const room = Math.max(1, numCtx - tokens.length);
        const wanted = options.num_predict;
        const maxTokens = wanted == null || wanted < 0 ? room : Math.min(wanted, room);
        const start = process.hrtime.bigint();
        let firstToken = 0n;
        let evalCount = 0;
        const result = await completion.generateCompletionWithMeta(tokens, {
            signal: controller.signal,
            maxTokens,
            disableContextShift: true,
            temperature: options.temperature,
            topK: options.top_k,
            topP: options.top_p,
            minP: options.min_p,
            seed: options.seed,
            repeatPenalty: {
                lastTokens: options.repeat_last_n,
                penalty: options.repeat_penalty,
                presencePenalty: options.presence_penalty,
                frequencyPenalty: options.frequency_penalty,
            },
            grammar,
            customStopTriggers: [...stops, ...(options.stop ?? [])],
            onToken: (/** @type {number[]} */ generated) => {
                if (evalCount === 0) firstToken = process.hrtime.bigint();
                evalCount += generated.length;
            },
            onTextChunk: (/** @type {string} */ text) => {
                if (text) emit({ id, text });
            },
        });
        const end = process.hrtime.bigint();
        if (firstToken === 0n) firstToken = end;
        emit({
            id,
            done: true,
            done_reason: result.metadata.stopReason === "maxTokens" ? "length" : "stop",
            prompt_tokens: tokens.length,
            cached_tokens: cached,
            eval_count: evalCount,
            load_ns: loadNs,
            prompt_ns: Number(firstToken - start),
            eval_ns: Number(end - firstToken),
        });
    } catch (error) {
        if (controller.signal.aborted) emit({ id, canceled: true });
        else emit({ id, error: error instanceof Error ? error.message : String(error) });
    } finally {
        running.delete(id);
    }
}

/** @param {any} request */
async function info(request) {
    const file = await readGgufFileInfo(request.path, { readTensorInfo: false, logWarnings: false, ignoreKeys: ["tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type", "tokenizer.ggml.scores"] });
    const metadata = /** @type {any} */ (file.metadata);
    const architecture = metadata.general?.architecture ?? "";
    emit({
        id: request.id,
        info: {
            architecture,
            name: metadata.general?.name ?? "",
            parameter_count: metadata.general?.parameter_count ?? null,
            size_label: metadata.general?.size_label ?? "",
            file_type: metadata.general?.file_type ?? null,
            context_length: metadata[architecture]?.context_length ?? null,
            embedding_length: metadata[architecture]?.embedding_length ?? null,
            chat_template: metadata.tokenizer?.chat_template ?? "",
            license: metadata.general?.license ?? "",
        },
    });
}

/** @param {any} request */
async function handle(request) {
    try {
        switch (request.op) {
            case "generate":
                return await generate(request);
            case "info":
                return await info(request);
            case "load":
                return emit({ id: request.id, loaded: true, load_ns: await ensureLoaded(request.path, request.num_ctx) });
            case "unload":
                await unload();
                return emit({ id: request.id, unloaded: true });
            default:
                return emit({ id: request.id, error: `unknown op ${JSON.stringify(request.op)}` });
        }
    } catch (error) {
        emit({ id: request.id, error: error instanceof Error ? error.message : String(error) });
    }
}

let queue = Promise.resolve();
for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const request = JSON.parse(line);
    if (request.op === "cancel") {
        const controller = running.get(request.id);
        if (controller) controller.abort();
        else canceledEarly.add(request.id);
        continue;
    }
    queue = queue.then(() => handle(request));
}
await queue;
await unload();
await llama.dispose();
