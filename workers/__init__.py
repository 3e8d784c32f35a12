"""arq workers: background interactions run here, through the same runner as foreground ones."""
