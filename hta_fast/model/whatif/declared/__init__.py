"""The what-if edits as declared: each edit's options, library keywords, how its values
become edits and its docs row (declaration), one module per edit, and the registry that
lists them in the order they apply (registry). The replay (hta_fast.model.whatif) reads
them; nothing here imports the replay."""
