"""The inline-box parser on well-formed, nested, truncated and garbage model outputs."""

from __future__ import annotations

from evals_repro.vidore_paper.bboxes import parse_answer


def test_well_formed_blocks():
    out = parse_answer(
        'Leave is 25 days <bboxes image="1">[100, 50, 600, 300], [0, 0, 10, 10]</bboxes> and the table '
        "<bboxes image='2'>[[5.5, 6, 7, 8]]</bboxes> agrees.",
        n_images=2,
    )
    assert out.status == "ok" and out.blocks == 2 and out.issues == []
    assert out.boxes == {1: [(100, 50, 600, 300), (0, 0, 10, 10)], 2: [(5.5, 6, 7, 8)]}
    assert out.text == "Leave is 25 days and the table agrees."


def test_reversed_corners_are_ordered_and_edges_clipped():
    out = parse_answer('<bboxes image="1">[600, 300, 100, 50], [900, 10, 1200, 20]</bboxes>', n_images=1)
    assert out.boxes == {1: [(100, 50, 600, 300), (900, 10, 1000, 20)]}
    assert out.status == "malformed" and "clipped" in out.issues[0]


def test_nested_block_closes_the_outer_one():
    out = parse_answer(
        '<bboxes image="1">[1, 2, 3, 4] <bboxes image="2">[5, 6, 7, 8]</bboxes> [9, 10, 11, 12]</bboxes>',
        n_images=2,
    )
    assert out.boxes == {1: [(1, 2, 3, 4)], 2: [(5, 6, 7, 8)]}
    assert any("nested" in i for i in out.issues)
    assert any("closing </bboxes> with no open block" in i for i in out.issues)
    assert out.text == "[9, 10, 11, 12]"  # what followed the inner block is outside any block


def test_truncated_output_keeps_complete_boxes():
    out = parse_answer('Answer. <bboxes image="1">[1, 2, 3, 4], [5, 6, 7', n_images=1)
    assert out.boxes == {1: [(1, 2, 3, 4)]}
    assert any("cut short" in i for i in out.issues) and any("never closed" in i for i in out.issues)
    assert out.text == "Answer."
    cut_tag = parse_answer('Answer. <bboxes image="1">[1, 2, 3, 4]</bboxes> more <bboxes ima', n_images=1)
    assert cut_tag.boxes == {1: [(1, 2, 3, 4)]} and any("tag cut short" in i for i in cut_tag.issues)
    assert cut_tag.text == "Answer. more"


def test_garbage_never_raises():
    for text in ["", "no boxes here", "<bboxes>[1,2,3,4]</bboxes>", "</bboxes>", "<<<>>>[[[", "\x00\ufffd"]:
        parse_answer(text, n_images=3)
    assert parse_answer("no boxes here", n_images=1).status == "no_boxes"
    out = parse_answer(
        '<bboxes image="7">[1, 2, 3, 4]</bboxes> <bboxes>[1,2,3,4]</bboxes> '
        '<bboxes image="1">[1, 2, 3] the header [a, b, c, d] [5, 5, 5, 9]</bboxes>',
        n_images=2,
    )
    assert out.boxes == {}
    issues = " | ".join(out.issues)
    assert "image 7 was not shown (pages 1..2)" in issues and "without an image number" in issues
    assert "not a box of four numbers: [1, 2, 3]" in issues and "[a, b, c, d]" in issues
    assert "text that is not a box: the header" in issues and "empty box" in issues


def test_pixel_grid_keeps_large_coordinates():
    out = parse_answer('<bboxes image="1">[1200, 10, 1900, 20]</bboxes>', n_images=1, scale=0)
    assert out.boxes == {1: [(1200, 10, 1900, 20)]} and out.issues == []


def test_gemini_order_is_read_y_first_and_kept_x_first():
    out = parse_answer('<bboxes image="1">[0, 10, 176.47, 500]</bboxes>', n_images=1, order="yxyx")
    assert out.boxes == {1: [(10, 0, 500, 176.47)]} and out.issues == []


def test_pixel_grids_cut_boxes_to_each_image_and_flag_them():
    text = '<bboxes image="1">[-60, 0, 60, 85]</bboxes> <bboxes image="2">[10, 10, 130, 300]</bboxes>'
    out = parse_answer(text, n_images=2, scale=0, grids={1: (120, 170), 2: (200, 250)})
    assert out.boxes == {1: [(0, 0, 60, 85)], 2: [(10, 10, 130, 250)]}
    assert out.clipped == 2 and out.status == "malformed"
    assert "image 1: box [-60, 0, 60, 85] clipped to the 120 x 170 grid" in out.issues
    assert out.as_record()["clipped"] == 2
