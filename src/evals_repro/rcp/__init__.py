"""The rcp-ndcg ViDoRe v3 release: its files, the gain link, replay of the published tables, pool rebuild."""
