"""ViDoRe v3 evaluated as its paper does, beyond retrieval.

- `zones`, `annotations`, `agreement`: inter-annotator agreement on bounding boxes (offline);
- `bboxes`, `grounding`: a generator's inline boxes, parsed and scored against each annotator;
- `llm`, `prompts`, `render`, `contexts`, `calls`, `rundir`, `answer`, `judge`, `labels`,
  `answer_results`: end-to-end answers from a retrieval pipeline (or the annotated pages, or none),
  judged by an LLM, split easy/hard, tabled.

Layer: products. May import every layer up to the runner; never the CLI.
"""
