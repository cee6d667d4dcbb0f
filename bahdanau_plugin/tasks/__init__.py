from .translation_with_source_words import TranslationWithSourceWordsTask

__all__ = ["TranslationWithSourceWordsTask"]
