"""Print the text of a PDF, one section per page: extract.py FILE.pdf"""

import sys

from pypdf import PdfReader

for number, page in enumerate(PdfReader(sys.argv[1]).pages, 1):
    print(f"## Page {number}\n")
    print(page.extract_text())
