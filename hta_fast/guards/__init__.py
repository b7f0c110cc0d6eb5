"""What keeps the package's outputs from doing harm: a folder it writes is replaced whole
or not at all (atomic_folder), and text read from a trace is made inert wherever it reaches
a terminal, a page, a spreadsheet or a figure (untrusted_text). Nothing here knows a trace."""
