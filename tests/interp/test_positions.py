"""Left padding, position ids from the mask, and position specs over real tokens."""

import pytest
import torch

from bayesgeom.interp.errors import PositionError
from bayesgeom.interp.positions import normalise_positions, position_mask, select_rows
from bayesgeom.interp.token_batch import left_pad, position_ids_from_mask


def test_left_pad_puts_last_tokens_in_the_last_column_with_real_positions():
    b = left_pad([[5, 6, 7], [8]], pad_id=0, prompt_index=[10, 11])
    assert b.input_ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert b.attention_mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert b.position_ids.tolist() == [[0, 1, 2], [0, 0, 0]]
    assert b.offsets.tolist() == [0, 2] and b.prompt_index.tolist() == [10, 11]
    assert torch.equal(position_ids_from_mask(torch.tensor([[0, 1, 1]])), torch.tensor([[0, 0, 1]]))


def test_row_selection_counts_real_tokens():
    lengths = torch.tensor([3, 1])
    last = select_rows("last", lengths, 3)
    assert last.column.tolist() == [2, 2] and last.position.tolist() == [2, 0]
    every = select_rows("all", lengths, 3)
    assert every.batch.tolist() == [0, 0, 0, 1] and every.column.tolist() == [0, 1, 2, 2]
    assert every.position.tolist() == [0, 1, 2, 0]
    some = select_rows((0, -1), torch.tensor([3, 2]), 3)
    assert some.column.tolist() == [0, 2, 1, 2] and some.position.tolist() == [0, 2, 0, 1]


def test_masks_match_selection_and_skip_pads():
    m = position_mask("all", torch.tensor([3, 1]), 3)
    assert m.tolist() == [[True, True, True], [False, False, True]]
    m = position_mask((0, 5), torch.tensor([3, 1]), 3)
    assert m.tolist() == [[True, False, False], [False, False, True]]


def test_bad_positions_are_clear_errors():
    with pytest.raises(PositionError, match="position 5 does not exist in prompt 1, which has 2"):
        select_rows((5,), torch.tensor([9, 2]), 9)
    with pytest.raises(PositionError, match="unknown positions 'first'"):
        normalise_positions("first")
    with pytest.raises(PositionError, match="empty list"):
        normalise_positions([])
