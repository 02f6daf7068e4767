"""Here-documents and simple commands (``context/_shell.py``: :func:`heredoc_lines`,
:func:`simple_commands`), as both readers of shell commands (the files the agent wrote, the working
memory) split a command."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tiered_agent.context._shell import heredoc_lines, line_words, simple_commands


def test_a_heredoc_is_taken_out_of_its_line_with_its_lines() -> None:
    command = "cd /repo && cat > a.py <<'EOF'\nx = 1\n\ny = 2\nEOF\npython a.py"
    assert list(heredoc_lines(command)) == [
        ("cd /repo && cat > a.py ", ["x = 1", "", "y = 2"]),
        ("python a.py", None),
    ]


def test_the_marker_ends_the_document_only_alone_on_its_line() -> None:
    command = 'tee out.txt <<"END.OF"\n  END.OF\nEND.OF  \nls'
    assert list(heredoc_lines(command)) == [("tee out.txt ", ["  END.OF"]), ("ls", None)]
    tabs = "cat <<-EOF > t.txt\n\tindented\n\tEOF\nls"
    assert list(heredoc_lines(tabs)) == [("cat  > t.txt", ["\tindented"]), ("ls", None)]


def test_an_unclosed_heredoc_runs_to_the_end_and_an_empty_one_is_empty() -> None:
    assert list(heredoc_lines("cat > a <<EOF\nx\ny")) == [("cat > a ", ["x", "y"])]
    assert list(heredoc_lines("cat > a <<EOF\nEOF")) == [("cat > a ", [])]


def test_simple_commands_split_at_the_separators() -> None:
    words = line_words("nl -ba f | sed -n '1,5p' && ; echo done;")
    assert list(simple_commands(words)) == [["nl", "-ba", "f"], ["sed", "-n", "1,5p"], ["echo", "done"]]


@given(st.text(max_size=200))
def test_any_text_keeps_every_line_outside_the_documents(text: str) -> None:
    read = list(heredoc_lines(text))
    kept = sum(1 + (len(body) + 1 if body is not None else 0) for _, body in read)
    assert kept >= len(text.splitlines()) >= len(read)
    for line, _ in read:
        for command in simple_commands(line_words(line)):
            assert command
