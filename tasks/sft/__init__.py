"""SFT data: the teacher's answers and the chat-format export (paper D.1)."""
