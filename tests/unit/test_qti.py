"""The exercises as a QTI 2.1 package (lesson/qti.py), held against what the standard requires of a package and of an
item (IMS QTI 2.1 and IMS Content Packaging 1.1), and each answer against its exercise."""

import io
import xml.etree.ElementTree as ET
import zipfile

import pytest

from lesson.exercises import Exercise
from lesson.qti import CP, ITEM_TYPE, MATCH_CORRECT, QTI, qti_package

CHOICE = Exercise(3, "heads", "Which head weighs “<b>der</b>” most? & why", {"view": "cross"},
                  ("L1 H2", "L2 H3", "L3 H1"), "L2 H3", 0.0, "Look at layer 2.", "It weighs 0.91.", "Heaviest head")
NUMBER = Exercise(1, "tokens and embeddings", "How many tokens?", {"view": "walk"}, (), "9", 0.5, "Count.", "9.",
                  "Tokens")
q, c = f"{{{QTI}}}", f"{{{CP}}}"


def package(exs) -> dict:
    with zipfile.ZipFile(io.BytesIO(qti_package(exs))) as z:
        assert z.testzip() is None
        return {name: ET.fromstring(z.read(name)) for name in z.namelist()}


def test_the_manifest_names_every_item_and_its_file():
    files = package([CHOICE, NUMBER])
    manifest = files["imsmanifest.xml"]
    assert manifest.tag == c + "manifest" and manifest.get("identifier")
    assert manifest.find(f"{c}metadata/{c}schema").text == "IMS Content"
    assert manifest.find(f"{c}metadata/{c}schemaversion").text == "1.1"
    assert manifest.find(c + "organizations") is not None  # required, even empty
    resources = manifest.findall(f"{c}resources/{c}resource")
    assert [r.get("identifier") for r in resources] == ["exercise-3", "exercise-1"]
    for r in resources:
        assert r.get("type") == ITEM_TYPE and r.get("href") in files
        assert [f.get("href") for f in r.findall(c + "file")] == [r.get("href")]
        assert files[r.get("href")].get("identifier") == r.get("identifier")
    assert set(files) == {"imsmanifest.xml", "items/exercise-3.xml", "items/exercise-1.xml"}


def test_a_choice_item_has_what_qti_requires_and_the_exercises_answer():
    item = package([CHOICE])["items/exercise-3.xml"]
    assert item.tag == q + "assessmentItem"
    assert {k: item.get(k) for k in ("identifier", "adaptive", "timeDependent")} == {
        "identifier": "exercise-3", "adaptive": "false", "timeDependent": "false"}
    assert item.get("title") == "Exercise 3: Heaviest head"
    # the order QTI's schema fixes: declarations, then the body, then the response processing
    assert [e.tag.removeprefix(q) for e in item] == ["responseDeclaration", "outcomeDeclaration", "itemBody",
                                                     "responseProcessing"]
    response = item.find(q + "responseDeclaration")
    assert (response.get("identifier"), response.get("cardinality"), response.get("baseType")) == (
        "RESPONSE", "single", "identifier")
    interaction = item.find(f"{q}itemBody/{q}choiceInteraction")
    assert interaction.get("responseIdentifier") == "RESPONSE" and interaction.get("maxChoices") == "1"
    assert interaction.find(q + "prompt").text == CHOICE.question  # text, escaped by the XML writer
    choices = {ch.get("identifier"): ch.text for ch in interaction.findall(q + "simpleChoice")}
    assert list(choices.values()) == list(CHOICE.options)
    right = response.find(f"{q}correctResponse/{q}value").text
    assert choices[right] == CHOICE.answer
    assert item.find(q + "responseProcessing").get("template") == MATCH_CORRECT
    outcome = item.find(q + "outcomeDeclaration")
    assert (outcome.get("identifier"), outcome.get("baseType")) == ("SCORE", "float")


def test_a_number_item_scores_within_the_exercises_tolerance():
    item = package([NUMBER])["items/exercise-1.xml"]
    response = item.find(q + "responseDeclaration")
    assert response.get("baseType") == "float" and response.find(f"{q}correctResponse/{q}value").text == "9"
    assert item.find(f"{q}itemBody/{q}p/{q}textEntryInteraction").get("responseIdentifier") == "RESPONSE"
    equal = item.find(f"{q}responseProcessing/{q}responseCondition/{q}responseIf/{q}equal")
    assert (equal.get("toleranceMode"), equal.get("tolerance")) == ("absolute", "0.5 0.5")
    assert [e.tag.removeprefix(q) for e in equal] == ["variable", "correct"]
    assert item.find(f"{q}responseProcessing//{q}setOutcomeValue").get("identifier") == "SCORE"


def test_no_exercise_no_package():
    with pytest.raises(ValueError, match="at least one exercise"):
        qti_package([])
